// obs serve: draw the page's charts, and keep the page live without a reload.
// The page listens to /api/events, a stream of server-sent events: one each time
// the warehouse changes (a round of the followed run, another process's build),
// with the run's status. When the stream is refused it polls /api/version every
// 250 ms instead. A hidden tab closes its stream (a browser keeps only a few
// connections to one server) and opens it again when shown. When the version
// changes the page fetches its own URL again and replaces only the blocks
// (data-live) whose content changed, redrawing a chart only when its figure
// changed. Text from the warehouse is never turned into markup here: blocks come
// from the server's escaped HTML, and status lines are set as text.
(function () {
  "use strict";
  var POLL_MS = 250;
  var versionMeta = document.querySelector('meta[name="obs-version"]');
  var runMeta = document.querySelector('meta[name="obs-run"]');
  var version = versionMeta ? versionMeta.content : "";
  var run = runMeta ? runMeta.content : "";
  var query = run ? "?run=" + encodeURIComponent(run) : "";
  var status = document.getElementById("live-status");
  var banner = document.getElementById("live-banner");
  var root = document.documentElement;
  var critical = null;
  var last = "";
  var landedAt = null;
  var offset = 0;
  var theme = null;
  var source = null;
  var polling = false;
  var refreshing = false;
  var again = false;

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
    var script = block.querySelector("script.figure");
    if (!holder || !script || !window.Plotly) { return; }
    var figure = themed(JSON.parse(script.textContent));
    var config = { responsive: true, displaylogo: false };
    if (holder.dataset.drawn) {
      window.Plotly.react(holder, figure.data, figure.layout, config);
    } else {
      window.Plotly.newPlot(holder, figure.data, figure.layout, config);
      holder.dataset.drawn = "1";
    }
  }

  // A page drawing only cartesian traces loads Plotly's partial bundle, whose script
  // tag lists the trace types it has: a chart that comes to need another one (a
  // table where there was none) reloads the page, which then loads the full bundle.
  function drawable(plot) {
    var bundle = document.querySelector("script[data-traces]");
    if (!bundle || !plot.dataset.traces) { return true; }
    var allowed = bundle.dataset.traces.split(",");
    return plot.dataset.traces.split(",").every(function (type) {
      return type === "" || allowed.indexOf(type) >= 0;
    });
  }

  function drawAll() {
    document.querySelectorAll("[data-live]").forEach(function (block) {
      if (block.querySelector("script.figure")) { draw(block); }
    });
  }

  function replace(fresh) {
    var incomingBlocks = fresh.querySelectorAll("[data-live]");
    var added = Array.prototype.some.call(incomingBlocks, function (incoming) {
      var name = incoming.getAttribute("data-live");
      return !document.querySelector('[data-live="' + CSS.escape(name) + '"]');
    });
    // new data brought a block the page lacks (the first findings of a run, a tab's
    // first charts): the page is loaded again rather than patched
    if (added) { window.location.reload(); return; }
    incomingBlocks.forEach(function (incoming) {
      var name = incoming.getAttribute("data-live");
      var current = document.querySelector('[data-live="' + CSS.escape(name) + '"]');
      if (!current) { return; }
      var newPlot = incoming.querySelector(".plot");
      var oldPlot = current.querySelector(".plot");
      if (newPlot && oldPlot) {
        if (!drawable(newPlot)) { window.location.reload(); return; }
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
  }

  // One refresh at a time; a change heard during one starts another after it.
  // <html data-live-shown> names the version the blocks show.
  function refresh() {
    if (refreshing) { again = true; return; }
    refreshing = true;
    var wanted = version;
    fetch(window.location.href, { headers: { "X-Obs-Live": "1" }, cache: "no-store" })
      .then(function (response) {
        // a "not found" or "unavailable" page whose address now answers: show it
        if (response.ok && document.querySelector("[data-until-ok]")) {
          window.location.reload();
          return null;
        }
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null) { return; }
        replace(new DOMParser().parseFromString(html, "text/html"));
        root.dataset.liveShown = wanted;
      })
      .catch(function () {})
      .finally(function () {
        refreshing = false;
        if (again) { again = false; refresh(); }
      });
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

  // What the server says of its version (an event, or a poll's answer).
  function heard(state) {
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
      root.dataset.liveVersion = version;
      refresh();
    }
    showStatus();
  }

  function poll() {
    fetch("/api/version" + query, { cache: "no-store" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .then(function (state) { if (state) { heard(state); } })
      .catch(function () {})
      .finally(function () { window.setTimeout(poll, POLL_MS); });
  }

  function listen() {
    if (polling || source || document.hidden) { return; }
    if (!window.EventSource) { polling = true; poll(); return; }
    source = new EventSource("/api/events" + query);
    source.onmessage = function (message) { heard(JSON.parse(message.data)); };
    source.onerror = function () {
      // a refused stream does not come back: poll instead (a dropped one reconnects)
      if (source && source.readyState === EventSource.CLOSED) {
        source = null;
        polling = true;
        poll();
      }
    };
  }

  function hush() {
    if (source) { source.close(); source = null; }
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

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) { hush(); } else { listen(); }
  });

  window.addEventListener("load", function () {
    root.dataset.liveVersion = version;
    root.dataset.liveShown = version;
    drawAll();
    listen();
    window.setInterval(showStatus, 1000);
  });
})();
