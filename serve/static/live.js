// obs serve: draw the page's charts, and keep the page live without a reload.
// Every few hundred milliseconds the page asks /api/version whether the warehouse
// changed; when it did, it fetches its own URL again and replaces only the
// blocks (data-live) whose content changed, redrawing a chart only when its
// figure changed. Text from the warehouse is never turned into markup here:
// blocks come from the server's escaped HTML, and status lines are set as text.
(function () {
  "use strict";
  var POLL_MS = 250;
  var versionMeta = document.querySelector('meta[name="obs-version"]');
  var runMeta = document.querySelector('meta[name="obs-run"]');
  var version = versionMeta ? versionMeta.content : "";
  var run = runMeta ? runMeta.content : "";
  var status = document.getElementById("live-status");
  var banner = document.getElementById("live-banner");
  var critical = null;
  var last = "";
  var landedAt = null;
  var offset = 0;
  var theme = null;

  // The static dashboards' Plotly template, given once in the page (#obs-theme).
  function themed(figure) {
    if (theme === null) {
      var block = document.getElementById("obs-theme");
      theme = block ? JSON.parse(block.textContent) : false;
    }
    if (theme && !figure.layout.template) { figure.layout.template = theme; }
    return figure;
  }

  function draw(block) {
    var holder = block.querySelector(".plot");
    var source = block.querySelector("script.figure");
    if (!holder || !source || !window.Plotly) { return; }
    var figure = themed(JSON.parse(source.textContent));
    var config = { responsive: true, displaylogo: false };
    if (holder.dataset.drawn) {
      window.Plotly.react(holder, figure.data, figure.layout, config);
    } else {
      window.Plotly.newPlot(holder, figure.data, figure.layout, config);
      holder.dataset.drawn = "1";
    }
  }

  function drawAll() {
    document.querySelectorAll("[data-live]").forEach(function (block) {
      if (block.querySelector("script.figure")) { draw(block); }
    });
  }

  function refresh() {
    fetch(window.location.href, { headers: { "X-Obs-Live": "1" }, cache: "no-store" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (html === null) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        fresh.querySelectorAll("[data-live]").forEach(function (incoming) {
          var name = incoming.getAttribute("data-live");
          var current = document.querySelector('[data-live="' + CSS.escape(name) + '"]');
          if (!current) { return; }
          var newPlot = incoming.querySelector(".plot");
          var oldPlot = current.querySelector(".plot");
          if (newPlot && oldPlot) {
            if (newPlot.dataset.figureHash !== oldPlot.dataset.figureHash) {
              current.querySelector("script.figure").textContent =
                incoming.querySelector("script.figure").textContent;
              oldPlot.dataset.figureHash = newPlot.dataset.figureHash;
              draw(current);
            }
            return;
          }
          if (incoming.innerHTML !== current.innerHTML) {
            current.replaceWith(document.importNode(incoming, true));
          }
        });
      })
      .catch(function () {});
  }

  function ago(seconds) {
    if (seconds < 90) { return Math.max(0, Math.round(seconds)) + " s ago"; }
    if (seconds < 5400) { return Math.round(seconds / 60) + " min ago"; }
    return Math.round(seconds / 3600) + " h ago";
  }

  function showStatus() {
    if (!status || !last || landedAt === null) { return; }
    var now = Date.now() / 1000 + offset;
    status.textContent = last + " landed " + ago(now - landedAt);
  }

  function poll() {
    var url = "/api/version" + (run ? "?run=" + encodeURIComponent(run) : "");
    fetch(url, { cache: "no-store" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (state) {
        if (!state) { return; }
        offset = state.now - Date.now() / 1000;
        if (state.last) { last = state.last; }
        if (typeof state.landed_at === "number") { landedAt = state.landed_at; }
        if (typeof state.critical === "number") {
          if (critical !== null && state.critical > critical && banner) {
            banner.textContent = "New critical alert or finding for " + run +
              " (" + state.critical + " in all): see its findings below.";
            banner.hidden = false;
          }
          critical = state.critical;
        }
        if (state.version !== version) {
          version = state.version;
          refresh();
        }
        showStatus();
      })
      .catch(function () {})
      .finally(function () { window.setTimeout(poll, POLL_MS); });
  }

  // The group selector (and any select[data-pick]): the page's URL takes the pick and
  // the blocks it changes are fetched again, as on new data.
  document.addEventListener("change", function (event) {
    var select = event.target;
    if (!(select instanceof HTMLSelectElement) || !select.hasAttribute("data-pick")) { return; }
    var url = new URL(window.location.href);
    new FormData(select.form).forEach(function (value, key) { url.searchParams.set(key, value); });
    window.history.replaceState(null, "", url.toString());
    refresh();
  });

  window.addEventListener("load", function () {
    drawAll();
    poll();
    window.setInterval(showStatus, 1000);
  });
})();
