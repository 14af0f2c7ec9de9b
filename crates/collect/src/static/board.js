// The live board refreshes its table in place: every 5 s it asks the
// collector for the board's inner HTML (escaped by the server, as the
// page itself is) and swaps it in. No framework, no other origin.
"use strict";
(function () {
  var board = document.getElementById("board");
  var stamp = document.getElementById("updated");
  if (!board) {
    return;
  }
  function refresh() {
    fetch("/board?part=rows", { credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok) {
          throw new Error("HTTP " + r.status);
        }
        return r.text();
      })
      .then(function (html) {
        board.innerHTML = html;
        if (stamp) {
          stamp.textContent = "updated " + new Date().toLocaleTimeString();
        }
      })
      .catch(function (e) {
        if (stamp) {
          stamp.textContent = "not updated: " + e.message;
        }
      });
  }
  setInterval(refresh, 5000);
})();
