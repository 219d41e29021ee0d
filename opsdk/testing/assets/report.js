(function () {
  "use strict";
  function keeps(row, control) {
    var want = control.value.trim();
    if (!want) { return true; }
    var have = row.getAttribute("data-" + control.getAttribute("data-filter")) || "";
    if (control.tagName === "SELECT") { return have === want; }
    return have.toLowerCase().indexOf(want.toLowerCase()) >= 0;
  }
  function apply(form) {
    var table = document.getElementById(form.getAttribute("data-target"));
    var controls = Array.prototype.slice.call(form.querySelectorAll("[data-filter]"));
    var rows = table.querySelectorAll("tbody tr");
    var shown = 0;
    Array.prototype.forEach.call(rows, function (row) {
      var keep = controls.every(function (c) { return keeps(row, c); });
      row.hidden = !keep;
      if (keep) { shown += 1; }
    });
    var count = form.querySelector(".shown");
    if (count) { count.textContent = shown + " of " + rows.length + " rows shown"; }
  }
  var forms = document.querySelectorAll("form.filters");
  Array.prototype.forEach.call(forms, function (form) {
    form.addEventListener("input", function () { apply(form); });
    form.addEventListener("change", function () { apply(form); });
    form.addEventListener("submit", function (e) { e.preventDefault(); apply(form); });
    var clear = form.querySelector("button.clear");
    if (clear) {
      clear.addEventListener("click", function (e) {
        e.preventDefault();
        Array.prototype.forEach.call(form.querySelectorAll("[data-filter]"),
          function (c) { c.value = ""; });
        apply(form);
      });
    }
    apply(form);
  });
  Array.prototype.forEach.call(document.querySelectorAll("td[data-filter-set]"), function (cell) {
    cell.addEventListener("click", function () {
      var form = document.getElementById(cell.getAttribute("data-form"));
      var set = JSON.parse(cell.getAttribute("data-filter-set"));
      Array.prototype.forEach.call(form.querySelectorAll("[data-filter]"), function (c) {
        var key = c.getAttribute("data-filter");
        c.value = Object.prototype.hasOwnProperty.call(set, key) ? set[key] : "";
      });
      apply(form);
      form.scrollIntoView();
    });
  });
}());