// Loads the npm packages pinned by scripts/deps.sh from .deps/npm/node_modules (or
// $RIVETKIT_NODE_MODULES). ESM ignores NODE_PATH and this folder has no node_modules of its own,
// so each package's "exports" map is resolved here (conditions node/import/default, in the
// package's own key order, as Node does) and the target file is imported by absolute URL; imports
// inside the package then resolve from its own location under node_modules.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const nodeModules =
    process.env.RIVETKIT_NODE_MODULES ?? path.resolve(here, "../../../.deps/npm/node_modules");

const conditions = new Set(["node", "import", "default"]);

function pickTarget(entry) {
    if (typeof entry === "string") return entry;
    if (entry === null || typeof entry !== "object") return undefined;
    for (const [key, value] of Object.entries(entry)) {
        if (!conditions.has(key)) continue;
        const target = pickTarget(value);
        if (target !== undefined) return target;
    }
    return undefined;
}

// packageUrl("rivetkit", "./client") → the file URL of the module rivetkit exports as
// "rivetkit/client".
export function packageUrl(name, subpath = ".") {
    const dir = path.join(nodeModules, name);
    const manifestPath = path.join(dir, "package.json");
    if (!fs.existsSync(manifestPath)) {
        throw new Error(`${name} is not installed under ${nodeModules} (run scripts/deps.sh)`);
    }
    const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8"));
    let target;
    if (manifest.exports !== undefined) {
        const exportsMap =
            typeof manifest.exports === "string" || !Object.keys(manifest.exports)[0]?.startsWith(".")
                ? { ".": manifest.exports }
                : manifest.exports;
        target = pickTarget(exportsMap[subpath]);
    } else if (subpath === ".") {
        target = manifest.module ?? manifest.main ?? "index.js";
    }
    if (target === undefined) throw new Error(`${name} does not export ${subpath}`);
    return pathToFileURL(path.join(dir, target)).href;
}

// importPackage("rivetkit", "./client") → the module rivetkit exports as "rivetkit/client".
export async function importPackage(name, subpath = ".") {
    return import(packageUrl(name, subpath));
}
