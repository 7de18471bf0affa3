/* Verifier corpus: small XDP programs in the shapes that make verification expensive (variable-length
 * header walks, loops, bpf-to-bpf calls, many branches, independent flags). Built by clang and made
 * into images by nanobpf-load in run_verifier_tests.sh --corpus; the verifier's processed instruction
 * counts on them are the pruning benchmark. tests/ebpf also compares them with the Linux verifier and
 * runs them through the interpreter and the JIT (test_verifier_corpus.py, test_xdp_images.py). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
