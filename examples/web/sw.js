// Offline once loaded. The page waits for this worker before it fetches the runtime, so every file
// it fetches passes here and is kept; the page itself is kept at install. Fresh copies win while
// online (a rebuilt site shows at the next load); the cache answers when the network fails.
const CACHE = "ember-web-v1";
const PAGE = ["./", "app.js"];
self.addEventListener("install", (e) => e.waitUntil(caches.open(CACHE).then((c) => c.addAll(PAGE)).then(() => self.skipWaiting())));
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));
self.addEventListener("fetch", (e) => {
  if (e.request.method !== "GET") return;
  e.respondWith(fetch(e.request).then((r) => {
    if (r.ok) {
      const copy = r.clone();
      caches.open(CACHE).then((c) => c.put(e.request, copy));
    }
    return r;
  }).catch(() => caches.match(e.request, { ignoreSearch: true }).then((r) => r || Response.error())));
});
