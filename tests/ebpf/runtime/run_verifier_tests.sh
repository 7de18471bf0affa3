#!/bin/sh
# eBPF verifier host tests (firmware/ebpf/verifier.c), built with AddressSanitizer and UBSan.
#   tests/ebpf/runtime/run_verifier_tests.sh [ARGS]   the table of test programs (test_verifier.c);
#                                                      ARGS go to test_verifier (-v, -k NAME, --no-relevance,
#                                                      --no-raw-pending)
#   ... --fuzz [N [SEED]]   differential soundness fuzzer (fuzz_verifier.c), N programs (default 20000)
#   ... --maps              map semantics Linux programs rely on (test_maps.c: LRU, per-CPU hash, devmaps,
#                           pinning, csum_diff)
#   ... --events            event maps (test_events.c: RINGBUF/PERF_EVENT_ARRAY rings, wrap, full -> counted
#                           drop, the helpers' errors, the verifier's map/helper pairs, cores appending at once)
#   ... --corpus [ARGS]     clang-compiled XDP programs (sw/ebpf/examples, sw/ebpf/bench, verifier_corpus/)
#                           made into images by nanobpf-load and verified; prints processed counts
# Outputs in build/ebpf/verifier-tests/.
set -e
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$ROOT"
OUT=build/ebpf/verifier-tests
mkdir -p "$OUT"
[ -f build/generated/.stamp ] || make -s defs
E=firmware/ebpf
T=tests/ebpf/runtime
RUNTIME="$E/verifier.c $E/error.c $E/helpers.c $E/quic_helpers.c $E/aead_soft.c $E/maps.c $E/interp.c $E/image.c $E/platform/host.c"
CFLAGS="-O2 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=undefined -I$E -Ibuild/generated/include"

case "$1" in
--maps)
    cc $CFLAGS $T/test_maps.c $RUNTIME -o "$OUT/test_maps"
    exec "$OUT/test_maps"
    ;;
--events)
    cc $CFLAGS -pthread $T/test_events.c $RUNTIME -o "$OUT/test_events"
    exec "$OUT/test_events"
    ;;
--fuzz)
    shift
    cc $CFLAGS $T/fuzz_verifier.c $RUNTIME -o "$OUT/fuzz_verifier"
    exec "$OUT/fuzz_verifier" "$@"
    ;;
--corpus)
    shift
    cc $CFLAGS $T/test_verifier.c $RUNTIME -o "$OUT/test_verifier"
    mkdir -p "$OUT/corpus"
    INC="-I/usr/include/$(uname -m)-linux-gnu -Isw/ebpf/include -Ibuild/generated/include"
    imgs=""
    for src in sw/ebpf/examples/*.c sw/ebpf/bench/*.c $T/verifier_corpus/*.c; do
        b=$(basename "$src" .c)
        clang -O2 -g -target bpf $INC -c "$src" -o "$OUT/corpus/$b.o"
        build/venv/bin/nanobpf-load "$OUT/corpus/$b.o" -o "$OUT/corpus/$b.nbpf"
        imgs="$imgs $OUT/corpus/$b.nbpf"
    done
    exec "$OUT/test_verifier" "$@" --image $imgs
    ;;
esac
cc $CFLAGS $T/test_verifier.c $RUNTIME -o "$OUT/test_verifier"
exec "$OUT/test_verifier" "$@"
