// toolgate's operator page: keeps the sections current without a reload.
// The server sends "changed" or "tick" on /ui/events; each one fetches the
// sections (/ui/state, server-rendered and escaped; 304 when what they show
// has not changed since the last, by their ETag) and swaps them in,
// keeping the answer forms of calls still waiting (so text being typed is
// not lost). Without EventSource it polls.
(function () {
  "use strict";
  var live = document.getElementById("live");
  var sections = document.getElementById("sections");
  if (!sections) { return; }
  // A refused answer comes back as the page itself, at the form's address
  // (/ui/pending/ID): put the page's own address back, so that a reload
  // asks for the page again instead of sending the stale answer twice.
  // What is shown (the error, the text typed) stays as it is.
  if (window.history && history.replaceState && location.pathname !== "/ui") {
    history.replaceState(null, "", "/ui");
  }
  // An error at the top of the page (an answer to a call that no longer
  // waits) is about that one answer: updates do not clear it, the person
  // dismisses it once read.
  document.querySelectorAll("body > .error").forEach(function (p) {
    var close = document.createElement("button");
    close.type = "button";
    close.className = "close";
    close.title = "Dismiss";
    close.setAttribute("aria-label", "Dismiss");
    close.textContent = "\u00d7";
    close.addEventListener("click", function () { p.remove(); });
    p.append(" ", close);
  });
  var busy = false, again = false;
  var etag = ""; // of the sections shown: unchanged ones answer 304

  function setLive(on) {
    if (live) { live.className = "live " + (on ? "on" : "off"); }
  }

  function merge(fresh) {
    // Moving a kept form out of the page and back takes the keyboard's
    // focus from it: give it back, with the caret where it was, so that
    // typing goes on into the same box.
    var focused = document.activeElement, sel = null;
    if (focused && sections.contains(focused) && typeof focused.selectionStart === "number") {
      sel = [focused.selectionStart, focused.selectionEnd, focused.selectionDirection, focused.scrollTop];
    }
    // Keep the forms of waits already shown: they may hold what a person
    // is typing. A wait is a call's ID and its wait's number: a call that
    // waits again (an approval, then its output) gets its new form.
    var key = function (tr) { return tr.getAttribute("data-id") + "/" + tr.getAttribute("data-wait"); };
    var oldRows = {};
    sections.querySelectorAll("#pending tr[data-id]").forEach(function (tr) {
      oldRows[key(tr)] = tr;
    });
    fresh.querySelectorAll("#pending tr[data-id]").forEach(function (tr) {
      var old = oldRows[key(tr)];
      if (old) {
        var keep = old.querySelector("td:last-child");
        var slot = tr.querySelector("td:last-child");
        if (keep && slot) { slot.replaceWith(keep); }
      }
    });
    sections.replaceChildren.apply(sections, Array.prototype.slice.call(fresh.childNodes));
    if (focused && focused !== document.activeElement && sections.contains(focused)) {
      focused.focus({ preventScroll: true });
      if (sel) {
        focused.setSelectionRange(sel[0], sel[1], sel[2]);
        focused.scrollTop = sel[3];
      }
    }
  }

  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var headers = etag ? { "If-None-Match": etag } : {};
    fetch("/ui/state", { credentials: "same-origin", cache: "no-store", headers: headers })
      .then(function (r) {
        if (r.status === 401) { window.location = "/ui/login"; return null; }
        if (r.status === 304 || !r.ok) { return null; } // nothing new to show
        var tag = r.headers.get("ETag") || "";
        return r.text().then(function (html) { return { html: html, tag: tag }; });
      })
      .then(function (got) {
        if (got === null) { return; }
        var t = document.createElement("template");
        t.innerHTML = got.html;
        merge(t.content);
        etag = got.tag; // only once shown
      })
      .catch(function () { setLive(false); })
      .finally(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }

  // The browser reconnects a stream that drops by itself, but gives up on
  // one that is refused: 401 once a restarted gateway forgot the session,
  // 503 with too many pages open. Then the page looks again (a 401 sends
  // the person to sign in) and opens a new stream a little later.
  function listen() {
    var es = new EventSource("/ui/events");
    es.onopen = function () { setLive(true); refresh(); };
    es.onmessage = refresh;
    es.onerror = function () {
      setLive(false);
      if (es.readyState === EventSource.CLOSED) {
        setTimeout(function () { refresh(); listen(); }, 3000);
      }
    };
  }

  if (window.EventSource) {
    listen();
  } else {
    setLive(true);
    setInterval(refresh, 3000);
  }
})();
