/* QUIC classifier: sorts frames without touching them (rules in quic_parse.h).
 *   malformed                                  -> XDP_DROP, quic_drops[reason]++
 *   not QUIC, long header, Version Negotiation -> XDP_PASS, quic_stats[...]++
 *   short header (or offloaded long header), CID with an OPEN entry in the key table -> XDP_PASS,
 *                                                 quic_stats[ONE_RTT]++
 *   short header, CID not in the key table     -> XDP_PASS, quic_stats[UNKNOWN_CID]++
 *   coalesced datagram (several QUIC packets)  -> XDP_PASS, quic_stats[COALESCED]++
 * xdp_quic.c runs the same classification and then protects or unprotects the 1-RTT packets. */
#include "quic_parse.h"

SEC("xdp")
int xdp_quic_classify(struct xdp_md *ctx) {
    __u32 zero = 0;
    struct nanobpf_quic_config *cfg = bpf_map_lookup_elem(&quic_config, &zero);
    struct quic_crypto *c = bpf_map_lookup_elem(&quic_scratch, &zero);
    if (!cfg || !c)
        return XDP_ABORTED;
    struct quic_pkt pk = {};
    int cls = quic_classify(ctx, cfg, c, &pk, 0, QUIC_CID_UNKNOWN);
    if (cls < 0)
        return quic_drop(QUIC_DROPPED(0) - cls);
    if (cls == QUIC_CANDIDATE)
        cls = quic_find_open(ctx, &pk, cfg->open_cid_lens) >= 0 && bpf_map_lookup_elem(&nanobpf_quic_keys, &pk.cid)
                  ? NANOBPF_QUIC_STAT_ONE_RTT
                  : NANOBPF_QUIC_STAT_UNKNOWN_CID;
    quic_count(&quic_stats, cls);
    return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
