// The run page's live progress: poll the run while it is going, then reload once so the results,
// figures and charts are the finished ones. Nothing else on the console needs JavaScript.
(function () {
  "use strict";
  function watch(section) {
    var url = section.getAttribute("data-progress-url");
    var bar = document.getElementById("run-progress");
    var status = document.getElementById("run-status");
    var counts = document.getElementById("run-counts");
    function poll() {
      fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (run) {
          bar.max = Math.max(run.total, 1);
          bar.value = run.completed;
          bar.textContent = run.completed + "/" + run.total;
          status.textContent = run.status;
          counts.textContent = run.completed + "/" + run.total + " done, " + run.passed + " passed, " +
            run.failed + " failed";
          if (run.finished) { window.location.reload(); } else { window.setTimeout(poll, 1500); }
        })
        .catch(function () { window.setTimeout(poll, 5000); });
    }
    window.setTimeout(poll, 1000);
  }
  document.addEventListener("DOMContentLoaded", function () {
    var section = document.getElementById("progress-section");
    if (section && section.getAttribute("data-finished") === "0") { watch(section); }
  });
})();
