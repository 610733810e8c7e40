// Puts the `config` query parameter into the page's config block (configured.html), and
// with `frame=1` adds the <iframe data-pc-child> an embedder needs (its URL comes from
// the config's childUrl); with `src=1` too, the iframe loads that URL at once, without a
// nonce, as a frame restored from session history does.
const query = new URLSearchParams(location.search);
document.getElementById("pc-config").textContent = query.get("config") || "";
if (query.get("frame") === "1") {
  const frame = document.createElement("iframe");
  frame.setAttribute("data-pc-child", "");
  frame.title = "AI assistant";
  if (query.get("src") === "1") frame.src = JSON.parse(query.get("config")).childUrl;
  document.body.append(frame);
}
