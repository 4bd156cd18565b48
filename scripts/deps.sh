#!/usr/bin/env bash
# Installs everything rivetkit-cpp needs on Debian 12, idempotently:
#   - C++ toolchain and libraries from Debian's packages (apt-get),
#   - the pinned Rivet Engine and JS packages from npm into .deps/npm (git-ignored).
# Safe to run repeatedly; it touches apt and npm only when something is missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

apt_packages=(
    build-essential cmake ninja-build ccache mold pkg-config git
    clang-14 libclang-rt-14-dev
    libboost1.81-dev libboost-url1.81-dev
    nlohmann-json3-dev libfmt-dev libspdlog-dev
    libssl-dev libsqlite3-dev
    libgtest-dev libgmock-dev libbenchmark-dev
    ca-certificates
    chromium
)
# Node.js and npm: Debian's packages only when no node/npm is on the machine already (an
# existing NodeSource node bundles npm and conflicts with Debian's npm package).
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    apt_packages+=(nodejs npm)
fi

missing=()
for p in "${apt_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if ((${#missing[@]})); then
    echo "deps: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm packages, pinned. Install scripts are skipped: nothing here needs a native build (rivetkit
# would otherwise compile an optional sqlite3 addon for minutes), and the engine binary ships
# inside its package. The engine ships as a prebuilt binary inside its npm package.
npm_dir="$root/.deps/npm"
npm_packages=(
    "@rivetkit/engine-cli@2.3.19"
    # Upstream codecs for the BARE known-answer vectors (tests/bare/vectors/generate.mjs); rivetkit
    # is also the official client. typescript transpiles rivetkit's shipped .ts codecs for node.
    "@rivetkit/engine-envoy-protocol@2.3.19"
    "rivetkit@2.3.19"
    "typescript@5.9.2"
    # Drives Debian's chromium in the dashboard test (tests/dashboard); 24.x still runs on
    # Debian 12's node 18.
    "puppeteer-core@24.43.1"
)
stamp="$npm_dir/.installed"
want="${npm_packages[*]}"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "deps: npm install ${want}" >&2
    mkdir -p "$npm_dir"
    [[ -f "$npm_dir/package.json" ]] || echo '{"name":"rivetkit-cpp-deps","private":true}' > "$npm_dir/package.json"
    npm install --prefix "$npm_dir" --no-audit --no-fund --ignore-scripts --save-exact "${npm_packages[@]}" >&2
    echo "$want" > "$stamp"
fi

# The inspector UI bundle rivetkit 2.3.19 serves at /inspector/ui/, taken out of the pinned
# rivetkit-napi package (src/inspector_ui links it into the host).
napi_node="$npm_dir/node_modules/@rivetkit/rivetkit-napi-linux-x64-gnu/rivetkit-napi.linux-x64-gnu.node"
ui_dir="$root/.deps/inspector-ui"
if [[ ! -f "$ui_dir/MANIFEST" || "$napi_node" -nt "$ui_dir/MANIFEST" ||
      "$root/scripts/extract-inspector-ui.mjs" -nt "$ui_dir/MANIFEST" ]]; then
    node "$root/scripts/extract-inspector-ui.mjs" "$napi_node" "$ui_dir"
fi
