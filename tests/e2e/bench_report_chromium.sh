#!/usr/bin/env bash
# The bench's HTML report in a real browser: `infergrid bench --from-json` renders a saved
# result, headless Chromium opens it from a file with no network, and the DOM the page's script
# leaves has every plot drawn: data-drawn equal to the number of gateways, one line or bar
# group per gateway, no console errors. A screenshot of the page is taken too.
set -euo pipefail
BIN=$1
ROOT=$2
source "$(dirname "$0")/lib.sh"

FIXTURE=$ROOT/tests/e2e/fixtures/bench-result.json
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
if [[ ! -x "$CHROMIUM" ]]; then
  echo "FAIL: no Chromium at $CHROMIUM (scripts/install-deps installs Debian's chromium)"
  exit 1
fi

"$BIN" bench --from-json "$FIXTURE" --html "$WORK/report.html" > "$WORK/render.out" 2>&1 ||
  { echo "FAIL: infergrid bench --from-json exited $?:"; cat "$WORK/render.out"; exit 1; }
[[ -s "$WORK/report.html" ]] || { echo "FAIL: no report written"; exit 1; }
if grep -Eqi '(src|href)=["'"'"']?(https?:)?//|@import|url\(' "$WORK/report.html"; then
  echo "FAIL: the report refers to something outside itself:"
  grep -Eoi '.{0,40}((src|href)=["'"'"']?(https?:)?//|@import|url\().{0,40}' "$WORK/report.html"
  exit 1
fi

# Headless Chromium, run as root in a sandboxed machine; no name resolves, so a page that
# needed the network would show it.
chrome() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --host-resolver-rules='MAP * ~NOTFOUND' --enable-logging=stderr --v=0 \
    --user-data-dir="$(mktemp -d -p "$WORK")" --virtual-time-budget=5000 "$@"
}

chrome --dump-dom "file://$WORK/report.html" > "$WORK/dom.html" 2> "$WORK/chromium.err" ||
  { echo "FAIL: chromium --dump-dom exited $?:"; tail -20 "$WORK/chromium.err"; exit 1; }
if grep -q ':CONSOLE' "$WORK/chromium.err"; then
  echo "FAIL: the page logged to the console:"; grep ':CONSOLE' "$WORK/chromium.err"; exit 1
fi

node -e '
  const fs = require("fs");
  const [fixture, domFile] = process.argv.slice(1);
  const n = JSON.parse(fs.readFileSync(fixture, "utf8")).runs.length;
  const dom = fs.readFileSync(domFile, "utf8");
  const fail = (msg) => { console.log("FAIL: " + msg); process.exit(1); };
  const attrs = (tag) => {
    const a = {};
    for (const m of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) a[m[1]] = m[2];
    return a;
  };
  const tags = (html, name) =>
    [...html.matchAll(new RegExp("<" + name + "\\b[^>]*>", "g"))].map((m) => attrs(m[0]));
  if (n < 2) fail("the fixture should have several runs, has " + n);

  // Each plot: [what one series is drawn as, how many of them].
  const plots = {
    "plot-ttft-cdf": ["path", n],
    "plot-throughput": ["path", n],
    "plot-prefix-hit": ["bar", n],
    "plot-ttft-percentiles": ["bar", 3 * n],
  };
  for (const [id, [kind, want]] of Object.entries(plots)) {
    const fig = dom.match(new RegExp("<figure[^>]*id=\"" + id + "\"[^>]*>([\\s\\S]*?)</figure>"));
    if (!fig) fail("no figure " + id);
    const svg = fig[1].match(/<svg\b([^>]*)>([\s\S]*?)<\/svg>/);
    if (!svg) fail(id + ": no <svg>");
    const drawn = attrs(svg[1])["data-drawn"];
    if (drawn !== String(n)) fail(id + ": data-drawn=" + drawn + ", want " + n);
    let marks;
    if (kind === "path") {
      // A line through several points: "M x,y L x,y ...".
      marks = tags(svg[2], "path").filter((a) => /^M\s*-?[\d.]+[\s,]+-?[\d.]+\s*L/.test(a.d || ""));
      if (tags(svg[2], "path").length !== want) fail(id + ": paths other than the series");
    } else {
      marks = tags(svg[2], "rect").filter(
          (a) => a.class === "bar" && parseFloat(a.width) > 0 && parseFloat(a.height) > 0);
    }
    if (marks.length !== want) fail(id + ": " + marks.length + " " + kind + "s drawn, want " + want);
    const colours = new Set(marks.map((a) => a.stroke || a.fill));
    if (colours.size !== n) fail(id + ": " + colours.size + " colours for " + n + " gateways");
    const legend = fig[1].match(/<div class="legend">([\s\S]*?)<\/div>/);
    if (!legend || tags(legend[1], "span").filter((a) => a.class === "sw").length !== n) {
      fail(id + ": no legend entry per gateway");
    }
  }
  const summary = dom.match(/<table id="summary">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/);
  if (!summary || tags(summary[1], "tr").length !== n) fail("the summary table has no row per run");
  if (!/<h1>infergrid bench: coding-agents-100<\/h1>/.test(dom)) fail("no header");
  if (!/<table id="planner">/.test(dom)) fail("no planner table");
' "$FIXTURE" "$WORK/dom.html"

chrome --hide-scrollbars --window-size=1280,2400 --screenshot="$WORK/report.png" \
  "file://$WORK/report.html" > "$WORK/shot.out" 2>&1 ||
  { echo "FAIL: chromium --screenshot exited $?:"; tail -20 "$WORK/shot.out"; exit 1; }
[[ -f "$WORK/report.png" ]] || { echo "FAIL: no screenshot"; exit 1; }
size=$(stat -c %s "$WORK/report.png")
# A blank page of this size is about 15 KB; the report's plots and tables make it several times more.
[[ "$(head -c 8 "$WORK/report.png" | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] ||
  { echo "FAIL: the screenshot is not a PNG"; exit 1; }
(( size > 60000 )) || { echo "FAIL: the screenshot is only $size bytes"; exit 1; }
echo "ok"
