// The reviewing page's keyboard: j/k next/previous item, p/f pass/fail on the current row (then the
// next row is current), n the note, Ctrl/Cmd+Enter saves (and the page moves to the next item).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("review-form");
    if (!form) { return; }
    var rows = Array.prototype.slice.call(form.querySelectorAll(".review-row"));
    var current = 0;
    function select(index) {
      if (!rows.length) { return; }
      current = Math.max(0, Math.min(rows.length - 1, index));
      rows.forEach(function (row, n) { row.classList.toggle("current", n === current); });
      rows[current].scrollIntoView({block: "nearest"});
    }
    function mark(passed) {
      var row = rows[current];
      if (!row) { return; }
      var score = row.querySelector("input[type=number]");
      if (score) {
        score.value = passed ? "1" : "0";
      } else {
        var radio = row.querySelector("input[type=radio][value=" + (passed ? "pass" : "fail") + "]");
        if (radio) { radio.checked = true; }
      }
      row.classList.add("marked");
      select(current + 1);
    }
    function go(id) {
      var link = document.getElementById(id);
      if (link) { window.location.href = link.href; }
    }
    rows.forEach(function (row, n) {
      row.addEventListener("focusin", function () { select(n); });
      row.addEventListener("click", function () { select(n); });
    });
    select(0);
    document.addEventListener("keydown", function (event) {
      // Readers get no save button (they cannot review): nothing for the keys to submit.
      if ((event.ctrlKey || event.metaKey) && event.key === "Enter" && document.getElementById("review-save")) {
        event.preventDefault();
        form.requestSubmit ? form.requestSubmit() : form.submit();
        return;
      }
      var target = event.target;
      var typing = target && (target.tagName === "TEXTAREA" || (target.tagName === "INPUT" && target.type !== "radio"));
      if (typing || event.ctrlKey || event.metaKey || event.altKey) { return; }
      var actions = {
        j: function () { go("next-item"); },
        k: function () { go("prev-item"); },
        p: function () { mark(true); },
        f: function () { mark(false); },
        n: function () { var note = document.getElementById("review-note"); if (note) { note.focus(); } }
      };
      if (actions[event.key]) { event.preventDefault(); actions[event.key](); }
    });
  });
})();
