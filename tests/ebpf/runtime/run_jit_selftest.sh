#!/bin/sh
# Build the JIT self-test for RV64 Linux user mode and run it under qemu-riscv64: plain RV64IMAC, with
# compressed instructions, and with Zba+Zbb (qemu's CPU then has the extensions). From the repo root:
#   tests/ebpf/runtime/run_jit_selftest.sh [build dir [VARIANT ...]]
# build dir: default build/ebpf/jit-selftest; VARIANT: plain, rvc, zba-zbb, rvc-zba-zbb (default: all).
set -eu
root=$(cd "$(dirname "$0")/../../.." && pwd)
out=${1:-$root/build/ebpf/jit-selftest}
[ $# -gt 0 ] && shift
variants=${*:-plain rvc zba-zbb rvc-zba-zbb}
gen=$root/build/generated
ebpf=$root/firmware/ebpf
CROSS=${CROSS:-riscv64-unknown-elf-}
QEMU=${QEMU:-qemu-riscv64}

[ -f "$gen/.stamp" ] || make -s -C "$root" defs
mkdir -p "$out"
# built under a name of its own and renamed: variants run at once (pytest workers) never see a partial file
"${CROSS}gcc" -march=rv64imac -mabi=lp64 -misa-spec=2.2 -mcmodel=medany -O2 -g -Wall -Wextra -Werror \
    -I"$ebpf" -I"$gen/include" --specs=picolibc.specs -nostartfiles -static -Wl,--no-warn-rwx-segments \
    -T "$ebpf/platform/rv64linux.ld" "$ebpf/platform/rv64linux_start.S" "$ebpf/platform/rv64linux.c" \
    "$ebpf/error.c" "$ebpf/interp.c" "$ebpf/maps.c" "$ebpf/helpers.c" "$ebpf/quic_helpers.c" "$ebpf/aead_soft.c" "$ebpf/jit_rv64.c" \
    "$root/tests/ebpf/runtime/jit_selftest.c" -o "$out/jit-selftest.$$"
mv -f "$out/jit-selftest.$$" "$out/jit-selftest"

status=0
run() {
    name=$1
    shift
    if "$@" > "$out/$name.log" 2>&1; then
        echo "jit-selftest $name: $(tail -n 1 "$out/$name.log")"
    else
        echo "jit-selftest $name: FAILED (log: $out/$name.log)"
        grep -E '^FAIL' "$out/$name.log" | head -n 20
        status=1
    fi
}
# qemu 7.2's default rv64 CPU already has Zba/Zbb: switch them off where the JIT must not use them.
base=rv64,zba=false,zbb=false
ext=rv64,zba=true,zbb=true
for v in $variants; do
    case $v in
    plain) run plain env QEMU_CPU=$base "$QEMU" "$out/jit-selftest" ;;
    rvc) run rvc env QEMU_CPU=$base "$QEMU" "$out/jit-selftest" --rvc ;;
    zba-zbb) run zba-zbb env QEMU_CPU=$ext "$QEMU" "$out/jit-selftest" --zba --zbb ;;
    rvc-zba-zbb) run rvc-zba-zbb env QEMU_CPU=$ext "$QEMU" "$out/jit-selftest" --rvc --zba --zbb ;;
    *) echo "run_jit_selftest.sh: unknown variant $v (plain, rvc, zba-zbb, rvc-zba-zbb)" >&2; exit 2 ;;
    esac
done
exit $status
