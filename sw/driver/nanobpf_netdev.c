// SPDX-License-Identifier: GPL-2.0
/*
 * nanobpf.ko virtual netdev (default nbpf%d) stacked on the Ethernet device of the DPU link.
 *
 * Receive (rx handler on the lower device): control frames (0x88B5) go to the control transport and
 * are consumed; shim frames (0x88B6) from the device carry DECRYPTED (and CID length 0): they lose the
 * shim and are delivered on the virtual netdev with skb->mark = decrypt_mark; any other shim is
 * malformed and dropped; other frames are delivered unmarked.
 * Transmit: (skb->mark & ~0xff) == encrypt_mark asks the device to seal the frame with the keys of the
 * connection whose destination CID is (skb->mark & 0xff) bytes long: the ENCRYPT shim with that length
 * is inserted ("seal this or drop it"); a length above 20 is dropped (tx_bad_mark), never sent unsealed.
 * Frames leave on the lower device.
 */
#include <linux/rtnetlink.h>
#include <linux/if_arp.h>
#include <asm/unaligned.h>

#include "nanobpf.h"

static const struct net_device_ops nbpf_vdev_ops;

bool nbpf_is_vdev(const struct net_device *dev)
{
	return dev->netdev_ops == &nbpf_vdev_ops;
}

static struct nbpf_link *nbpf_vdev_link(const struct net_device *dev)
{
	return ((struct nbpf_vpriv *)netdev_priv(dev))->link;
}

/* ---------------------------------------------------------------- receive */

/* Remove the 4-byte shim after the MAC addresses; skb->data is right after the 0x88B6 EtherType. */
static int nbpf_strip_shim(struct sk_buff *skb)
{
	const u8 *p;
	__be16 inner;

	if (!pskb_may_pull(skb, NBPF_SHIM_HLEN) || skb_mac_header_len(skb) != ETH_HLEN)
		return -EINVAL;
	p = skb->data;
	inner = get_unaligned((const __be16 *)(p + 2));
	/* the device sends DECRYPTED with CID length 0, nothing else (ENCRYPT is the host's) */
	if (p[0] != NANOBPF_SHIM_F_DECRYPTED || p[1] ||
	    ntohs(inner) < ETH_P_802_3_MIN || inner == htons(NANOBPF_CTRL_ETHERTYPE) ||
	    inner == htons(NANOBPF_SHIM_ETHERTYPE))
		return -EINVAL;
	if (skb_cow(skb, 0))	/* the MAC header is rewritten: unshare it */
		return -ENOMEM;
	skb_pull_rcsum(skb, NBPF_SHIM_HLEN);
	memmove(skb_mac_header(skb) + NBPF_SHIM_HLEN, skb_mac_header(skb), 2 * ETH_ALEN);
	skb_set_mac_header(skb, -ETH_HLEN);
	skb->protocol = inner;
	skb_reset_network_header(skb);
	skb_reset_mac_len(skb);
	return 0;
}

static rx_handler_result_t nbpf_handle_frame(struct sk_buff **pskb)
{
	struct sk_buff *skb = *pskb;
	struct nbpf_link *link = rcu_dereference(skb->dev->rx_handler_data);
	struct net_device *vdev;
	u32 mark = 0;

	if (unlikely(skb->pkt_type == PACKET_LOOPBACK))
		return RX_HANDLER_PASS;
	if (skb->protocol == htons(NANOBPF_CTRL_ETHERTYPE)) {
		nbpf_ctrl_rx(link, skb);
		consume_skb(skb);
		return RX_HANDLER_CONSUMED;
	}
	vdev = READ_ONCE(link->vdev);
	if (!vdev || !(vdev->flags & IFF_UP)) {
		kfree_skb(skb);
		if (vdev)
			dev_core_stats_rx_dropped_inc(vdev);
		return RX_HANDLER_CONSUMED;
	}
	skb = skb_share_check(skb, GFP_ATOMIC);
	if (!skb)
		return RX_HANDLER_CONSUMED;
	*pskb = skb;
	if (skb->protocol == htons(NANOBPF_SHIM_ETHERTYPE)) {
		if (nbpf_strip_shim(skb)) {
			nbpf_stat_inc(link, NANOBPF_DRV_STAT_RX_BAD_SHIM);
			dev_core_stats_rx_dropped_inc(vdev);
			kfree_skb(skb);
			return RX_HANDLER_CONSUMED;
		}
		/* nbpf_strip_shim() accepts DECRYPTED only */
		mark = READ_ONCE(nbpf_decrypt_mark);
		nbpf_stat_inc(link, NANOBPF_DRV_STAT_RX_DECRYPTED);
	}
	skb->mark = mark;
	skb->dev = vdev;
	if (skb->pkt_type == PACKET_HOST || skb->pkt_type == PACKET_OTHERHOST)
		skb->pkt_type = ether_addr_equal_64bits(eth_hdr(skb)->h_dest, vdev->dev_addr) ?
				PACKET_HOST : PACKET_OTHERHOST;
	nbpf_stat_inc(link, NANOBPF_DRV_STAT_RX_FRAMES);
	dev_sw_netstats_rx_add(vdev, skb->len + ETH_HLEN);
	return RX_HANDLER_ANOTHER;
}

struct nbpf_link *nbpf_lower_link(const struct net_device *dev)
{
	ASSERT_RTNL();
	if (rcu_access_pointer(dev->rx_handler) != nbpf_handle_frame)
		return NULL;
	return rtnl_dereference(dev->rx_handler_data);
}

/* ---------------------------------------------------------------- transmit */

static netdev_tx_t nbpf_vdev_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct nbpf_link *link = nbpf_vdev_link(dev);
	struct net_device *lower = rcu_dereference_bh(link->lower_rcu);
	u32 mark = skb->mark, cid_len = mark & NBPF_MARK_CID_MASK;
	unsigned int len;
	int ret;

	if (!lower || skb->len < ETH_HLEN)
		goto drop;
	if ((mark & ~NBPF_MARK_CID_MASK) == READ_ONCE(nbpf_encrypt_mark)) {
		/* "seal this or drop it": never sent without the shim */
		if (cid_len > NANOBPF_CTRL_MAX_CID) {
			nbpf_stat_inc(link, NANOBPF_DRV_STAT_TX_BAD_MARK);
			goto drop;
		}
		if (skb_cow_head(skb, NBPF_SHIM_HLEN))
			goto drop;
		skb_push(skb, NBPF_SHIM_HLEN);
		memmove(skb->data, skb->data + NBPF_SHIM_HLEN, 2 * ETH_ALEN);
		put_unaligned_be16(NANOBPF_SHIM_ETHERTYPE, skb->data + 2 * ETH_ALEN);
		skb->data[2 * ETH_ALEN + 2] = NANOBPF_SHIM_F_ENCRYPT;
		skb->data[2 * ETH_ALEN + 3] = cid_len;
		skb_reset_mac_header(skb);
		nbpf_stat_inc(link, NANOBPF_DRV_STAT_TX_ENCRYPT);
	}
	len = skb->len;
	skb->dev = lower;
	ret = dev_queue_xmit(skb);
	if (likely(ret == NET_XMIT_SUCCESS || ret == NET_XMIT_CN)) {
		dev_sw_netstats_tx_add(dev, 1, len);
		nbpf_stat_inc(link, NANOBPF_DRV_STAT_TX_FRAMES);
	} else {
		dev_core_stats_tx_dropped_inc(dev);
	}
	return NETDEV_TX_OK;
drop:
	dev_core_stats_tx_dropped_inc(dev);
	kfree_skb(skb);
	return NETDEV_TX_OK;
}

/* ---------------------------------------------------------------- netdev ops */

static int nbpf_vdev_init(struct net_device *dev)
{
	dev->tstats = netdev_alloc_pcpu_stats(struct pcpu_sw_netstats);
	return dev->tstats ? 0 : -ENOMEM;
}

static void nbpf_vdev_destructor(struct net_device *dev)
{
	free_percpu(dev->tstats);
	dev->tstats = NULL;
}

static int nbpf_vdev_open(struct net_device *dev)
{
	struct nbpf_link *link = nbpf_vdev_link(dev);

	if (!link->hooked)
		return -ENODEV;
	netif_stacked_transfer_operstate(link->lower, dev);
	return 0;
}

static int nbpf_vdev_stop(struct net_device *dev)
{
	struct nbpf_link *link = nbpf_vdev_link(dev);

	if (link->lower) {
		dev_uc_unsync(link->lower, dev);
		dev_mc_unsync(link->lower, dev);
	}
	return 0;
}

static void nbpf_vdev_set_rx_mode(struct net_device *dev)
{
	struct nbpf_link *link = nbpf_vdev_link(dev);
	struct net_device *lower;

	rcu_read_lock();
	lower = rcu_dereference(link->lower_rcu);
	if (lower) {
		dev_uc_sync(lower, dev);
		dev_mc_sync(lower, dev);
	}
	rcu_read_unlock();
}

static int nbpf_vdev_set_mac(struct net_device *dev, void *addr)
{
	/* The vdev answers for the lower device's MAC address only (no unicast filter games). */
	return -EOPNOTSUPP;
}

static int nbpf_vdev_get_iflink(const struct net_device *dev)
{
	struct nbpf_link *link = nbpf_vdev_link(dev);
	struct net_device *lower;
	int ifindex = 0;

	rcu_read_lock();
	lower = rcu_dereference(link->lower_rcu);
	if (lower)
		ifindex = lower->ifindex;
	rcu_read_unlock();
	return ifindex;
}

static const struct net_device_ops nbpf_vdev_ops = {
	.ndo_init		= nbpf_vdev_init,
	.ndo_open		= nbpf_vdev_open,
	.ndo_stop		= nbpf_vdev_stop,
	.ndo_start_xmit		= nbpf_vdev_xmit,
	.ndo_set_rx_mode	= nbpf_vdev_set_rx_mode,
	.ndo_set_mac_address	= nbpf_vdev_set_mac,
	.ndo_validate_addr	= eth_validate_addr,
	.ndo_get_stats64	= dev_get_tstats64,
	.ndo_get_iflink		= nbpf_vdev_get_iflink,
};

static void nbpf_vdev_setup(struct net_device *dev)
{
	ether_setup(dev);
	dev->netdev_ops = &nbpf_vdev_ops;
	dev->needs_free_netdev = true;
	dev->priv_destructor = nbpf_vdev_destructor;
	dev->priv_flags |= IFF_NO_QUEUE;
	dev->priv_flags &= ~IFF_TX_SKB_SHARING;
	dev->features |= NETIF_F_LLTX | NETIF_F_NETNS_LOCAL;
	dev->hw_features = 0;
}

/* Create and register the vdev, hook the rx handler on the lower device. Under RTNL. */
int nbpf_vdev_create(struct nbpf_link *link, struct net *net, struct net_device *lower,
		     const char *vname, struct netlink_ext_ack *extack)
{
	struct net_device *dev;
	int err;

	ASSERT_RTNL();
	if (lower->type != ARPHRD_ETHER || (lower->flags & IFF_LOOPBACK) ||
	    lower->addr_len != ETH_ALEN) {
		NL_SET_ERR_MSG(extack, "the DPU link must be an Ethernet device");
		return -EINVAL;
	}
	if (nbpf_is_vdev(lower)) {
		NL_SET_ERR_MSG(extack, "cannot stack on a nanobpf device");
		return -EINVAL;
	}
	if (netdev_is_rx_handler_busy(lower)) {
		NL_SET_ERR_MSG(extack, "the interface already has an rx handler (bridge, bond, macvlan...)");
		return -EBUSY;
	}
	if (lower->mtu < ETH_MIN_MTU + NBPF_SHIM_HLEN) {
		NL_SET_ERR_MSG(extack, "MTU of the interface too small for the shim");
		return -EINVAL;
	}
	dev = alloc_netdev(sizeof(struct nbpf_vpriv), vname,
			   strchr(vname, '%') ? NET_NAME_ENUM : NET_NAME_USER, nbpf_vdev_setup);
	if (!dev)
		return -ENOMEM;
	((struct nbpf_vpriv *)netdev_priv(dev))->link = link;
	dev_net_set(dev, net);
	eth_hw_addr_set(dev, lower->dev_addr);
	dev->mtu = lower->mtu - NBPF_SHIM_HLEN;
	dev->min_mtu = ETH_MIN_MTU;
	dev->max_mtu = lower->max_mtu > NBPF_SHIM_HLEN ? lower->max_mtu - NBPF_SHIM_HLEN : dev->mtu;
	dev->needed_headroom = lower->needed_headroom + NBPF_SHIM_HLEN;
	dev->needed_tailroom = lower->needed_tailroom;

	link->lower = lower;
	netdev_hold(lower, &link->lower_tracker, GFP_KERNEL);
	rcu_assign_pointer(link->lower_rcu, lower);
	link->vdev = dev;

	err = register_netdevice(dev);
	if (err) {
		NL_SET_ERR_MSG(extack, "cannot register the virtual netdev (name in use or invalid?)");
		free_netdev(dev);
		goto err_lower;
	}
	err = netdev_rx_handler_register(lower, nbpf_handle_frame, link);
	if (err) {
		NL_SET_ERR_MSG(extack, "cannot register the rx handler on the interface");
		goto err_unreg;
	}
	err = netdev_upper_dev_link(lower, dev, extack);
	if (err) {
		netdev_rx_handler_unregister(lower);
		goto err_unreg;
	}
	netif_stacked_transfer_operstate(lower, dev);
	link->hooked = true;
	return 0;

err_unreg:
	unregister_netdevice(dev);
err_lower:
	RCU_INIT_POINTER(link->lower_rcu, NULL);
	synchronize_net();
	netdev_put(lower, &link->lower_tracker);
	link->lower = NULL;
	link->vdev = NULL;
	return err;
}

/*
 * Undo nbpf_vdev_create(): the lower device is going away, the link is detached or the module
 * unloads. Idempotent. Under RTNL; the vdev is freed when RTNL is released. Wakes a request in
 * flight (it fails with -ENODEV); the link itself is freed later under nbpf_cfg_lock.
 */
void nbpf_link_unhook(struct nbpf_link *link)
{
	struct net_device *lower = link->lower, *vdev = link->vdev;

	ASSERT_RTNL();
	WRITE_ONCE(link->dead, true);
	complete(&link->done);
	if (!link->hooked)
		return;
	link->hooked = false;
	netdev_upper_dev_unlink(lower, vdev);
	netdev_rx_handler_unregister(lower);	/* synchronize_net(): no rx handler runs after this */
	unregister_netdevice(vdev);
	RCU_INIT_POINTER(link->lower_rcu, NULL);
	synchronize_net();
	netdev_put(lower, &link->lower_tracker);
	WRITE_ONCE(link->vdev, NULL);
	link->lower = NULL;
}
