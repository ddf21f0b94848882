/* evalsite's admin behaviour, no dependencies:
 * - stacked inlines whose fieldset has the class evalsite-collapsible: each row collapses to its
 *   heading (click it; "expand all"/"collapse all"), rows with errors and new rows stay open, and
 *   more than PAGE_SIZE rows are shown a page at a time (all rows stay in the form, so a save still
 *   publishes every row);
 * - a field whose widget has data-evalsite-show-for="a b" is shown only while the row's `type`
 *   select has one of those values. */
(function () {
  "use strict";
  var PAGE_SIZE = 20;

  function rowsOf(group) {
    return Array.prototype.filter.call(group.querySelectorAll(".inline-related"), function (row) {
      return !row.classList.contains("empty-form");
    });
  }

  function summaryOf(row) {
    var parts = [];
    ["type", "severity", "priority"].forEach(function (name) {
      var field = row.querySelector("select[name$='-" + name + "']");
      if (field && field.value) parts.push(field.value);
    });
    var title = row.querySelector("input[name$='-name']");
    if (title && title.value && !row.classList.contains("has_original")) parts.unshift(title.value);
    return parts.join(" · ");
  }

  function decorate(row) {
    var heading = row.querySelector(":scope > h3");
    if (!heading || heading.querySelector(".evalsite-toggle")) return;
    var toggle = document.createElement("span");
    toggle.className = "evalsite-toggle";
    heading.insertBefore(toggle, heading.firstChild);
    var summary = document.createElement("span");
    summary.className = "evalsite-summary";
    heading.querySelector(".inline_label") ? heading.querySelector(".inline_label").after(summary) : heading.appendChild(summary);
    var refresh = function () {
      toggle.textContent = row.classList.contains("evalsite-collapsed") ? "▸" : "▾";
      summary.textContent = summaryOf(row);
    };
    heading.addEventListener("click", function (event) {
      if (event.target.closest("a, input, label")) return;
      row.classList.toggle("evalsite-collapsed");
      refresh();
    });
    row.addEventListener("change", refresh);
    row._evalsiteRefresh = refresh;
    var hasErrors = row.querySelector(".errorlist, .errors");
    if (row.classList.contains("has_original") && !hasErrors) row.classList.add("evalsite-collapsed");
    refresh();
  }

  function setAll(group, collapsed) {
    rowsOf(group).forEach(function (row) {
      row.classList.toggle("evalsite-collapsed", collapsed);
      if (row._evalsiteRefresh) row._evalsiteRefresh();
    });
  }

  function paginate(group, tools) {
    var rows = rowsOf(group);
    var pager = tools.querySelector(".evalsite-pager");
    if (rows.length <= PAGE_SIZE) {
      rows.forEach(function (row) { row.classList.remove("evalsite-off-page"); });
      if (pager) pager.hidden = true;
      return;
    }
    var pages = Math.ceil(rows.length / PAGE_SIZE);
    var page = group._evalsitePage;
    if (page === undefined) {
      var firstError = rows.findIndex(function (row) { return row.querySelector(".errorlist, .errors"); });
      page = firstError >= 0 ? Math.floor(firstError / PAGE_SIZE) : 0;
    }
    page = Math.max(0, Math.min(page, pages - 1));
    group._evalsitePage = page;
    rows.forEach(function (row, i) {
      row.classList.toggle("evalsite-off-page", Math.floor(i / PAGE_SIZE) !== page);
    });
    pager.hidden = false;
    pager.querySelector(".evalsite-page-label").textContent =
      (page * PAGE_SIZE + 1) + "–" + Math.min(rows.length, (page + 1) * PAGE_SIZE) + " of " + rows.length;
    pager.querySelector(".evalsite-prev").disabled = page === 0;
    pager.querySelector(".evalsite-next").disabled = page === pages - 1;
  }

  function setUpGroup(fieldset) {
    var group = fieldset.closest(".inline-group") || fieldset;
    rowsOf(group).forEach(decorate);
    var tools = document.createElement("div");
    tools.className = "evalsite-inline-tools";
    tools.innerHTML = '<button type="button" class="evalsite-expand">Expand all</button>' +
      '<button type="button" class="evalsite-collapse">Collapse all</button>' +
      '<span class="evalsite-pager" hidden><button type="button" class="evalsite-prev">‹ Previous</button> ' +
      '<span class="evalsite-page-label"></span> <button type="button" class="evalsite-next">Next ›</button></span>';
    var heading = fieldset.querySelector("h2");
    (heading && heading.closest("summary") || heading || fieldset.firstChild).after(tools);
    tools.querySelector(".evalsite-expand").addEventListener("click", function () { setAll(group, false); });
    tools.querySelector(".evalsite-collapse").addEventListener("click", function () { setAll(group, true); });
    tools.querySelector(".evalsite-prev").addEventListener("click", function () {
      group._evalsitePage -= 1; paginate(group, tools);
    });
    tools.querySelector(".evalsite-next").addEventListener("click", function () {
      group._evalsitePage += 1; paginate(group, tools);
    });
    group._evalsiteTools = tools;
    paginate(group, tools);
  }

  function applyTypeRules(scope) {
    scope.querySelectorAll("[data-evalsite-show-for]").forEach(function (widget) {
      var row = widget.closest(".inline-related") || widget.closest("form");
      var typeSelect = row && row.querySelector("select[name$='-type'], select[name='type']");
      var formRow = widget.closest(".form-row");
      if (!typeSelect || !formRow) return;
      var wanted = widget.getAttribute("data-evalsite-show-for").split(/\s+/);
      formRow.classList.toggle("evalsite-not-applicable", wanted.indexOf(typeSelect.value) < 0);
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("fieldset.evalsite-collapsible").forEach(setUpGroup);
    applyTypeRules(document);
    document.addEventListener("change", function (event) {
      if (event.target.matches && event.target.matches("select[name$='-type'], select[name='type']")) {
        applyTypeRules(event.target.closest(".inline-related") || document);
      }
    });
    // A row added with "Add another": open, on the last page, with its type rules applied.
    document.addEventListener("formset:added", function (event) {
      var row = event.target;
      var group = row.closest(".inline-group");
      if (!group || !group.querySelector("fieldset.evalsite-collapsible")) return;
      decorate(row);
      row.classList.remove("evalsite-collapsed");
      applyTypeRules(row);
      group._evalsitePage = Math.ceil(rowsOf(group).length / PAGE_SIZE) - 1;
      if (group._evalsiteTools) paginate(group, group._evalsiteTools);
    });
  });
})();
