// Extracts the runnable blocks of a Markdown guide, in order, as JSON lines:
//   ```bash [cwd=checkout] [background wait="text"]   a command block
//   ```<lang> file=<path>                             a file to write (path relative to ~)
// Other blocks are prose. Used by scripts/check-docs.sh.
import fs from "node:fs";

const text = fs.readFileSync(process.argv[2], "utf8");
const fence = /^```([^\n]*)\n([\s\S]*?)^```$/gm;
for (const m of text.matchAll(fence)) {
    const info = m[1].trim();
    const body = m[2];
    const [lang, ...rest] = info.split(/\s+/);
    const attrs = {};
    for (const a of rest.join(" ").matchAll(/(\w+)(?:=("[^"]*"|\S+))?/g))
        attrs[a[1]] = a[2] === undefined ? true : a[2].replace(/^"|"$/g, "");
    if (attrs.file) {
        console.log(JSON.stringify({ kind: "file", path: attrs.file, content: body }));
    } else if (lang === "bash") {
        console.log(JSON.stringify({
            kind: attrs.background ? "background" : "run",
            cwd: attrs.cwd === "checkout" ? "checkout" : "home",
            wait: attrs.wait ?? null,
            content: body,
        }));
    }
}
