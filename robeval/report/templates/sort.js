(function () {
  function value(cell) {
    var text = (cell ? cell.textContent : "").trim();
    var number = parseFloat(text.replace(/[%,]/g, ""));
    return isNaN(number) ? text.toLowerCase() : number;
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var body = table.tBodies[0];
    var heads = Array.prototype.slice.call(table.tHead.rows[table.tHead.rows.length - 1].cells);
    var corner = table.tHead.rows[0].cells[0];
    var columns = heads.indexOf(corner) >= 0 ? heads : [corner].concat(heads);
    columns.forEach(function (th, column) {
      if (!th.hasAttribute("data-sort")) { return; }
      th.addEventListener("click", function () {
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        columns.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = value(a.cells[column]), y = value(b.cells[column]);
          return (x > y ? 1 : x < y ? -1 : 0) * (ascending ? 1 : -1);
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
})();
