// drover web UI: the ACL token (session storage, sent on every call) and the
// live stream (server-sent events read with fetch, so the token goes in a
// header; reconnects from the last index it was told).
(function () {
  "use strict";
  const KEY = "drover.token";
  const body = document.body;
  const content = document.getElementById("content");
  const live = document.getElementById("live");

  // Every status is swapped (a denial shows in #flash or #content), 4xx/5xx as errors.
  htmx.config.responseHandling = [
    { code: "204", swap: false },
    { code: "[23]..", swap: true },
    { code: "[45]..", swap: true, error: true },
  ];

  function token() { return sessionStorage.getItem(KEY) || ""; }
  function headers() {
    const t = token();
    return t ? { Authorization: "Bearer " + t } : {};
  }
  body.addEventListener("htmx:configRequest", function (e) {
    Object.assign(e.detail.headers, headers());
  });

  document.getElementById("token-form").addEventListener("submit", function (e) {
    e.preventDefault();
    const input = document.getElementById("token-input");
    sessionStorage.setItem(KEY, input.value.trim());
    input.value = "";
    htmx.trigger(body, "drover:token");
    stream.restart(0);
  });
  document.getElementById("token-clear").addEventListener("click", function () {
    sessionStorage.removeItem(KEY);
    htmx.trigger(body, "drover:token");
    stream.restart(0);
  });

  // -- refresh: at most every 200 ms, never while the user types in #content
  let pending = false, lastRefresh = 0, timer = null;
  function refresh() {
    pending = true;
    if (timer) return;
    const wait = Math.max(0, 200 - (Date.now() - lastRefresh));
    timer = setTimeout(function () {
      timer = null;
      const active = document.activeElement;
      if (active && content.contains(active) && /^(INPUT|SELECT|TEXTAREA)$/.test(active.tagName)) {
        active.addEventListener("blur", refresh, { once: true });
        return;
      }
      pending = false;
      lastRefresh = Date.now();
      htmx.trigger(body, "drover:refresh");
    }, wait);
  }

  // -- the stream
  const stream = {
    index: 0,          // the last index this page is known to reflect
    controller: null,
    started: false,
    connects: 0,
    setState(state) { live.dataset.state = state; live.textContent = state; },
    url() {
      const q = new URLSearchParams({ topics: body.dataset.topics, from_index: String(this.index) });
      if (body.dataset.namespace) q.set("namespace", body.dataset.namespace);
      if (body.dataset.job) q.set("job", body.dataset.job);
      return "/ui/events?" + q.toString();
    },
    restart(index) {
      if (index !== undefined) this.index = index;
      this.failed = false;
      if (this.controller) this.controller.abort();
      else if (!this.running) this.open();
    },
    // A dropped connection, as a network failure would: the loop reconnects.
    drop() { if (this.controller) this.controller.abort("dropped"); },
    async open() {
      this.started = true;
      this.running = true;
      for (;;) {
        const controller = new AbortController();
        this.controller = controller;
        this.connects += 1;
        try {
          const resp = await fetch(this.url(), { headers: headers(), signal: controller.signal });
          if (!resp.ok) throw new Error("stream: HTTP " + resp.status);
          this.setState("live");
          await this.read(resp.body.getReader());
        } catch (err) {
          // a dropped or aborted connection: reconnect below
        }
        this.controller = null;
        if (this.failed) { this.running = false; return; }
        this.setState("reconnecting");
        await new Promise(function (r) { setTimeout(r, 500); });
      }
    },
    async read(reader) {
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        if (this.failed) { reader.cancel(); return; }
        buf += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          this.handle(buf.slice(0, cut));
          buf = buf.slice(cut + 2);
        }
      }
    },
    handle(block) {
      let event = "message", data = "";
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      const msg = data ? JSON.parse(data) : {};
      if (event === "change") { this.index = Math.max(this.index, msg.index); refresh(); }
      else if (event === "heartbeat") { this.index = Math.max(this.index, msg.index); }
      else if (event === "resync") { this.index = 0; refresh(); }
      else if (event === "failed") {
        this.failed = true;
        this.setState("stopped");
        live.title = msg.message;
      }
    },
  };
  window.droverStream = stream;

  // The first fragment tells the index it reflects: the stream starts there,
  // so nothing that changed in between is missed.
  body.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target !== content) return;
    const marker = document.getElementById("index-marker");
    const index = marker ? Number(marker.dataset.index) : 0;
    if (!stream.started) { stream.index = index; stream.open(); }
  });
})();
