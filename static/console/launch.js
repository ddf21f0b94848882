// The launch form: the test set and rubric selects offer only the chosen bot's (their options carry
// data-bot); a choice of another bot is cleared when the bot changes. The form refuses such a pair
// anyway: this only keeps it from being offered.
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var bot = document.querySelector("#launch-form select[name=agent_id]");
    if (!bot) { return; }
    var owned = document.querySelectorAll("#launch-form select[name=test_set_id], #launch-form select[name=rubric_id]");
    function filter() {
      Array.prototype.forEach.call(owned, function (select) {
        Array.prototype.forEach.call(select.querySelectorAll("option[data-bot]"), function (option) {
          var mine = option.getAttribute("data-bot") === bot.value;
          option.hidden = !mine;
          option.disabled = !mine;
          if (!mine && option.selected) { select.value = ""; }
        });
        Array.prototype.forEach.call(select.querySelectorAll("optgroup"), function (group) {
          group.hidden = !group.querySelector("option:not([hidden])");
        });
        // A select with no empty choice (the test set) falls to the bot's first one.
        if (select.selectedIndex < 0) {
          var first = select.querySelector("option[data-bot]:not([hidden])");
          if (first) { select.value = first.value; }
        }
      });
    }
    bot.addEventListener("change", filter);
    filter();
  });
})();
