// Extracts the inspector UI bundle that rivetkit 2.3.19 serves at /inspector/ui/ and
// /inspector/tab.css from the pinned npm package @rivetkit/rivetkit-napi-linux-x64-gnu, where
// upstream's core embeds it at build time (include_dir!). Nothing is written by hand and nothing
// is fetched: the bytes come out of the shared object exactly as the TypeScript host serves them.
//
//   node scripts/extract-inspector-ui.mjs <rivetkit-napi.linux-x64-gnu.node> <out dir>
//
// Writes <out>/ui/** (index.html, assets/..., ...), <out>/tab.css and <out>/MANIFEST (path,
// size, sha256 per file). Fails loudly when the layout is not the one expected.
//
// How: in the shared object every embedded file is a `File { path: &str, contents: &[u8] }`
// (two pointer/length pairs) inside a `Dir { path, entries: &[DirEntry] }` tree. The pointers are
// R_X86_64_RELATIVE relocations (their targets are the addends), the lengths plain integers. The
// root of the UI tree is the entry array holding "index.html"; it is walked from there. The tab
// stylesheet is the single file of another tree that the compiler folded into the serving code:
// its bytes follow their path ("styles.css") and its length is the immediate of the copy that
// serves it (`lea rsi, [rip + start]` then `mov edx, length`).

import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const [input, out] = process.argv.slice(2);
if (!input || !out) {
    console.error("usage: extract-inspector-ui.mjs <rivetkit-napi .node> <out dir>");
    process.exit(2);
}
const buf = readFileSync(input);
const fail = (why) => {
    console.error(`extract-inspector-ui: ${why} (${input})`);
    process.exit(1);
};

// --- ELF64 ------------------------------------------------------------------------------------
if (buf.readUInt32BE(0) !== 0x7f454c46 || buf[4] !== 2 || buf[5] !== 1) fail("not a little-endian ELF64 file");
const u16 = (o) => buf.readUInt16LE(o);
const u32 = (o) => buf.readUInt32LE(o);
const u64 = (o) => Number(buf.readBigUInt64LE(o));

const segments = [];
for (let i = 0, ph = u64(0x20); i < u16(0x38); i++, ph += u16(0x36)) {
    if (u32(ph) !== 1) continue; // PT_LOAD
    segments.push({ offset: u64(ph + 8), vaddr: u64(ph + 0x10), size: u64(ph + 0x20), exec: (u32(ph + 4) & 1) !== 0 });
}
const fileOffset = (vaddr) => {
    for (const s of segments) if (vaddr >= s.vaddr && vaddr < s.vaddr + s.size) return vaddr - s.vaddr + s.offset;
    return -1;
};
const vaddrOf = (offset) => {
    for (const s of segments) if (offset >= s.offset && offset < s.offset + s.size) return offset - s.offset + s.vaddr;
    return -1;
};

// Relocated pointers: where they live -> what they point at.
const pointers = new Map();
for (let i = 0, sh = u64(0x28); i < u16(0x3c); i++, sh += u16(0x3a)) {
    if (u32(sh + 4) !== 4) continue; // SHT_RELA
    const start = u64(sh + 0x18);
    const end = start + u64(sh + 0x20);
    for (let e = start; e < end; e += 24) {
        if ((u64(e + 8) & 0xffffffff) === 8) pointers.set(u64(e), Number(buf.readBigInt64LE(e + 16)));
    }
}
const lengthAt = (vaddr) => {
    const o = fileOffset(vaddr);
    return o < 0 ? -1 : u64(o);
};
const bytesAt = (vaddr, length) => {
    const o = fileOffset(vaddr);
    if (o < 0 || o + length > buf.length) fail(`pointer 0x${vaddr.toString(16)} outside the file`);
    return buf.subarray(o, o + length);
};

// An entry's (path, second slice) when `at` holds a relocated path pointer followed by its length,
// a second relocated pointer and its length.
const PATH = /^[A-Za-z0-9_.@\-]+(\/[A-Za-z0-9_.@\-]+)*$/;
function entryAt(at) {
    const pathPtr = pointers.get(at);
    const slicePtr = pointers.get(at + 16);
    if (pathPtr === undefined || slicePtr === undefined) return null;
    const pathLen = lengthAt(at + 8);
    const sliceLen = lengthAt(at + 24);
    if (pathLen < 1 || pathLen > 300 || sliceLen < 0 || sliceLen > 64e6) return null;
    const path = bytesAt(pathPtr, pathLen).toString("latin1");
    if (!PATH.test(path)) return null;
    return { path, slicePtr, sliceLen };
}

// --- the UI tree --------------------------------------------------------------------------------
const indexEntries = [];
for (const at of pointers.keys()) {
    const e = entryAt(at);
    if (e && e.path === "index.html") indexEntries.push(at);
}
if (indexEntries.length !== 1) fail(`expected one embedded index.html, found ${indexEntries.length}`);

// The entry stride: the distance to the nearest other entry of the same array.
let stride = 0;
for (const s of [32, 40, 48, 56]) {
    if (entryAt(indexEntries[0] - s) || entryAt(indexEntries[0] + s)) {
        stride = s;
        break;
    }
}
if (!stride) fail("cannot find the entries around index.html");

// The root array: contiguous entries around index.html whose paths have no '/'.
let first = indexEntries[0];
while (entryAt(first - stride) && !entryAt(first - stride).path.includes("/")) first -= stride;
const files = new Map();
function walk(start, count) {
    for (let i = 0, at = start; i < count; i++, at += stride) {
        const e = entryAt(at);
        if (!e) fail(`bad entry at 0x${at.toString(16)}`);
        const isDir = !/\.[A-Za-z0-9]+$/.test(e.path);
        if (isDir) {
            // Dir: the slice is its entry array; the path pointer sits 0 or 8 bytes into an entry
            // (wherever the enum's tag is not).
            const child = [0, 8].map((k) => e.slicePtr + k).find((a) => entryAt(a));
            if (child === undefined) fail(`directory ${e.path} has no readable entries`);
            walk(child, e.sliceLen);
        } else {
            files.set(e.path, bytesAt(e.slicePtr, e.sliceLen));
        }
    }
}
let rootCount = 0;
for (let at = first; entryAt(at) && !entryAt(at).path.includes("/"); at += stride) rootCount++;
walk(first, rootCount);

const index = files.get("index.html")?.toString("utf8") ?? "";
if (!/^<!doctype html>/i.test(index.trimStart())) fail("index.html is not an HTML document");
for (const m of index.matchAll(/(?:src|href)="\.?\/?((?:assets|images)\/[^"?#]+)"/g)) {
    if (!files.has(m[1])) fail(`index.html references ${m[1]}, which is not in the bundle`);
}

// --- tab.css ------------------------------------------------------------------------------------
const marker = buf.indexOf("styles.css/*!");
if (marker < 0) fail("tab stylesheet not found");
const cssStart = marker + "styles.css".length;
const cssVaddr = vaddrOf(cssStart);
let cssLength = -1;
for (const s of segments.filter((x) => x.exec)) {
    for (let o = s.offset; o < s.offset + s.size - 12; o++) {
        // lea rsi, [rip + disp32] = 48 8d 35 disp32; the next instruction: mov edx, imm32 = ba imm32
        if (buf[o] !== 0x48 || buf[o + 1] !== 0x8d || buf[o + 2] !== 0x35) continue;
        const target = o - s.offset + s.vaddr + 7 + buf.readInt32LE(o + 3);
        if (target !== cssVaddr || buf[o + 7] !== 0xba) continue;
        cssLength = u32(o + 8);
        break;
    }
    if (cssLength >= 0) break;
}
if (cssLength <= 0) fail("cannot find the tab stylesheet's length");
const css = buf.subarray(cssStart, cssStart + cssLength);
if (!css.includes("--rivet-") || !/}\s*$/.test(css.toString("utf8"))) fail("tab stylesheet looks truncated");

// --- write --------------------------------------------------------------------------------------
rmSync(out, { recursive: true, force: true });
const manifest = [];
const write = (rel, bytes) => {
    const path = join(out, rel);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
    manifest.push(`${rel} ${bytes.length} ${createHash("sha256").update(bytes).digest("hex")}`);
};
// Byte order, as the C++ table is searched.
for (const [path, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) write(`ui/${path}`, bytes);
write("tab.css", css);
writeFileSync(join(out, "MANIFEST"), manifest.join("\n") + "\n");
console.error(`extract-inspector-ui: ${files.size} UI files and tab.css written to ${out}`);
