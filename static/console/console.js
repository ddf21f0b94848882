// The run page's live view: while the run goes, poll its live endpoint for the progress, the cards
// and the rows finished since the last answer (inserted in the table's order without a reload), and
// say so when no worker picks the run up. Once it is finished, reload once so the charts, filters
// and pages are the finished ones. And a trace's "Show more" appends the next page of tool calls.
// Nothing else on the console needs JavaScript, and both work without it (reload, or follow the link).
(function () {
  "use strict";
  function rowFrom(html) {
    var body = document.createElement("tbody");
    body.innerHTML = html.trim();
    return body.firstElementChild;
  }
  // A row is keyed by its result, or by its item in a run with repeats: a later attempt of an item
  // replaces the item's row (its verdict and chips), and sorts it again.
  function insertRow(tbody, row) {
    var key = row.getAttribute("data-row-key");
    var old = tbody.querySelector('tr[data-row-key="' + key + '"]');
    if (old) {
      if (key.indexOf("item-") !== 0) { return; }
      old.remove();
    }
    var empty = tbody.querySelector("tr.no-rows");
    if (empty) { empty.remove(); }
    var sortKey = row.getAttribute("data-sort-key");
    var rows = tbody.querySelectorAll("tr[data-sort-key]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-sort-key") > sortKey) { tbody.insertBefore(row, rows[i]); return; }
    }
    tbody.appendChild(row);
  }
  function watch(section) {
    var base = section.getAttribute("data-progress-url");
    var filters = section.getAttribute("data-filters");
    var liveRows = section.getAttribute("data-live-rows") === "1";
    var cursor = section.getAttribute("data-cursor") || "";
    var bar = document.getElementById("run-progress");
    var status = document.getElementById("run-status");
    var counts = document.getElementById("run-counts");
    var cards = document.getElementById("run-cards");
    var noWorker = document.getElementById("no-worker");
    var tbody = document.querySelector("#results-table tbody");
    var shown = document.getElementById("shown-count");
    function poll() {
      var url = base + "?after=" + encodeURIComponent(cursor) + (filters ? "&" + filters : "");
      fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
        .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
        .then(function (run) {
          if (run.finished) { window.location.reload(); return; }
          bar.max = Math.max(run.total, 1);
          bar.value = run.completed;
          bar.textContent = run.completed + "/" + run.total;
          status.textContent = run.status;
          counts.textContent = run.completed + "/" + run.total + " done, " + run.passed + " passed, " +
            run.failed + " failed" + (run.unassessed ? ", " + run.unassessed + " unassessed" : "");
          cards.innerHTML = run.cards;
          if (noWorker) {
            noWorker.hidden = !run.unclaimed;
            // "Run queued" from the launch is no longer the news: nothing is consuming the queue.
            if (run.unclaimed) {
              document.querySelectorAll(".messagelist .success").forEach(function (m) { m.remove(); });
            }
          }
          if (liveRows && tbody) {
            run.rows.forEach(function (html) { insertRow(tbody, rowFrom(html)); });
            if (shown) { shown.textContent = tbody.querySelectorAll("tr[data-row-key]").length; }
          }
          cursor = run.cursor || cursor;
          window.setTimeout(poll, 1500);
        })
        .catch(function () { window.setTimeout(poll, 5000); });
    }
    window.setTimeout(poll, 1000);
  }
  // The link opens the next page of the trace's calls; here that page's calls are appended to the
  // timeline in place of the link, which becomes the next page's link (or goes, on the last page).
  function showMore(link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      var item = link.closest("li");
      link.setAttribute("aria-busy", "true");
      fetch(link.href, {credentials: "same-origin"})
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (html) {
          var page = new DOMParser().parseFromString(html, "text/html");
          page.querySelectorAll("#timeline li.call").forEach(function (call) {
            item.parentNode.insertBefore(document.importNode(call, true), item);
          });
          var range = document.getElementById("shown-range");
          var pageRange = page.getElementById("shown-range");
          if (range && pageRange) {
            range.textContent = range.textContent.split("–")[0] + "–" + pageRange.textContent.split("–")[1];
          }
          var next = page.getElementById("more-calls");
          if (next) {
            next = document.importNode(next, true);
            item.replaceWith(next);
            showMore(next.querySelector("[data-more-calls]"));
          } else {
            item.remove();
          }
        })
        .catch(function () { window.location.href = link.href; });
    });
  }
  // The alignment trial form: only the field of the candidate chosen is shown (all are there without
  // script, and the server reads only the chosen one).
  function candidateFields(form) {
    function show() {
      var chosen = form.querySelector("input[name=kind]:checked");
      form.querySelectorAll("[data-kind]").forEach(function (field) {
        field.hidden = !chosen || field.getAttribute("data-kind") !== chosen.value;
      });
    }
    form.querySelectorAll("input[name=kind]").forEach(function (radio) { radio.addEventListener("change", show); });
    show();
  }
  document.addEventListener("DOMContentLoaded", function () {
    var trialForm = document.getElementById("trial-form");
    if (trialForm) { candidateFields(trialForm); }
    var section = document.getElementById("progress-section");
    if (section && section.getAttribute("data-finished") === "0") { watch(section); }
    var more = document.querySelector("[data-more-calls]");
    if (more) { showMore(more); }
  });
})();
