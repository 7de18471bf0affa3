// SPDX-License-Identifier: GPL-2.0
/*
 * nanobpf.ko: host driver of the NanoBPF DPU. Module parameters, the host state, attach/detach of
 * the DPU link, the netdev notifier, debugfs and the keepalive. docs/control.md, section
 * "nanobpf.ko", describes the behaviour.
 */
#include <linux/module.h>
#include <linux/rtnetlink.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/mm.h>

#include "nanobpf.h"

unsigned int nbpf_decrypt_mark = NANOBPF_DECRYPT_MARK;
module_param_named(decrypt_mark, nbpf_decrypt_mark, uint, 0644);
MODULE_PARM_DESC(decrypt_mark, "skb mark of frames the device decrypted (shim flag DECRYPTED)");

/*
 * The first retransmission timeout and its ceiling (ctrl.toml's defaults): a device that answers
 * slowly (the simulated DPU runs some 500 times slower than the board) needs longer ones. Read once
 * per request; 1 ms at least, the ceiling not below the first.
 */
static int nbpf_ms_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int err = kstrtouint(val, 0, &v);

	if (err || v < 1 || v > 600000) {
		pr_err("nanobpf: %s '%s' refused: 1..600000 milliseconds\n", kp->name, val);
		return err ?: -EINVAL;
	}
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops nbpf_ms_ops = {
	.set = nbpf_ms_set,
	.get = param_get_uint,
};
unsigned int nbpf_retry_ms = NANOBPF_CTRL_RETRY_MS;
unsigned int nbpf_retry_max_ms = NANOBPF_CTRL_RETRY_MAX_MS;
module_param_cb(retry_ms, &nbpf_ms_ops, &nbpf_retry_ms, 0644);
MODULE_PARM_DESC(retry_ms, "first retransmission timeout of a control request in ms (doubles each retry)");
module_param_cb(retry_max_ms, &nbpf_ms_ops, &nbpf_retry_max_ms, 0644);
MODULE_PARM_DESC(retry_max_ms, "longest retransmission timeout in ms");

/*
 * encrypt_mark is a base: a frame marked base | n (n = 0..20, the length of its destination CID) is
 * sealed by the device. Its low byte must be zero, and it must not be 0 (every unmarked frame would
 * then ask to be sealed): other values are refused, at load and when written at run time.
 */
unsigned int nbpf_encrypt_mark = NANOBPF_ENCRYPT_MARK;
static_assert((NANOBPF_ENCRYPT_MARK & NBPF_MARK_CID_MASK) == 0 && NANOBPF_ENCRYPT_MARK != 0);

static int nbpf_encrypt_mark_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int err = kstrtouint(val, 0, &v);

	if (err) {
		pr_err("nanobpf: encrypt_mark '%s' is not a number\n", val);
		return err;
	}
	if (v & NBPF_MARK_CID_MASK || !v) {
		pr_err("nanobpf: encrypt_mark 0x%08x refused: the mark base needs its low byte zero (a frame is "
		       "marked base | CID length) and must not be 0\n", v);
		return -EINVAL;
	}
	WRITE_ONCE(*(unsigned int *)kp->arg, v);
	return 0;
}

static const struct kernel_param_ops nbpf_encrypt_mark_ops = {
	.set = nbpf_encrypt_mark_set,
	.get = param_get_uint,
};
module_param_cb(encrypt_mark, &nbpf_encrypt_mark_ops, &nbpf_encrypt_mark, 0644);
MODULE_PARM_DESC(encrypt_mark, "SO_MARK base asking the device to seal: base | n for an n-byte destination CID "
		 "(n = 0..20); low byte zero, not 0 (default 0x4E420100)");

/* Host state, written under nbpf_cfg_lock (key table: RCU readers). */
DEFINE_MUTEX(nbpf_cfg_lock);
struct nbpf_link *nbpf_cur;
DEFINE_HASHTABLE(nbpf_keys, 9);
unsigned int nbpf_nkeys;
struct nbpf_prog *nbpf_prog_cur;
u32 nbpf_tables[NANOBPF_TABLE_COUNT][NBPF_TABLE_MAX_ENTRIES];
unsigned long nbpf_tables_touched[NANOBPF_TABLE_COUNT];
const unsigned int nbpf_table_entries[NANOBPF_TABLE_COUNT] = {
	[NANOBPF_CTRL_TABLE_PORT] = NANOBPF_PISA_PORT_ENTRY_COUNT,
	[NANOBPF_CTRL_TABLE_PROFILE] = NANOBPF_PISA_PROFILE_ENTRY_COUNT,
	[NANOBPF_CTRL_TABLE_LPORT_CFG] = NANOBPF_PISA_LPORT_CFG_COUNT,
};
static_assert(NANOBPF_PISA_PORT_ENTRY_COUNT <= NBPF_TABLE_MAX_ENTRIES);
static_assert(NANOBPF_PISA_PROFILE_ENTRY_COUNT <= NBPF_TABLE_MAX_ENTRIES);
static_assert(NANOBPF_PISA_LPORT_CFG_COUNT <= NBPF_TABLE_MAX_ENTRIES);
/*
 * Sequence numbers continue across detach/attach. After a module reload they start again from 0: a
 * device still in the old session answers STALE_SEQ with its last number and the driver continues
 * after it (docs/control.md).
 */
u32 nbpf_seq_next;
u8 nbpf_last_status;
char nbpf_last_errmsg[NANOBPF_CTRL_MAX_ERRMSG];

static struct dentry *nbpf_dbg_root;
static void nbpf_keepalive_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(nbpf_keepalive_work, nbpf_keepalive_fn);
static void nbpf_reap_fn(struct work_struct *work);
static DECLARE_WORK(nbpf_reap_work, nbpf_reap_fn);

/* ---------------------------------------------------------------- debugfs */

static int nbpf_stats_show(struct seq_file *s, void *unused)
{
	static const char *const names[NANOBPF_DRV_STAT_COUNT] = NANOBPF_DRV_STAT_NAMES;
	struct nbpf_link *link = s->private;
	int i;

	for (i = 0; i < NANOBPF_DRV_STAT_COUNT; i++)
		seq_printf(s, "%s %lld\n", names[i], (long long)atomic64_read(&link->stats[i]));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nbpf_stats);

static int nbpf_session_show(struct seq_file *s, void *unused)
{
	struct nbpf_link *link = s->private;

	seq_printf(s, "state %u\nepoch %u\nversion %u\nseq %u\nkey_slots %u\nmax_image %u\n"
		   "max_body %u\ncores %u\n", READ_ONCE(link->state), READ_ONCE(link->epoch),
		   READ_ONCE(link->version), READ_ONCE(link->seq), READ_ONCE(link->key_slots),
		   READ_ONCE(link->max_image), READ_ONCE(link->max_body), READ_ONCE(link->cores));
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nbpf_session);

/* ---------------------------------------------------------------- attach / detach */

/* Why the first exchange failed, for the extended ACK. */
static void nbpf_attach_errmsg(int err, struct netlink_ext_ack *extack)
{
	if (err == -ETIMEDOUT)	/* a device with another key drops every request unanswered */
		NL_SET_ERR_MSG(extack, "no answer from the device: check the device key (CTRL_KEY)");
	else if (err == -ENODEV)
		NL_SET_ERR_MSG(extack, "the DPU link went away");
	else
		NL_SET_ERR_MSG(extack, "the device did not complete HELLO and the replay of the host state");
}

/* key: the device key (NANOBPF_CTRL_KEY_LEN bytes); only the keys derived from it are kept. */
int nbpf_attach(struct net *net, const char *ifname, const char *vname, const u8 *key,
		struct netlink_ext_ack *extack)
{
	struct net_device *lower;
	struct nbpf_link *link;
	int err;

	lockdep_assert_held(&nbpf_cfg_lock);
	nbpf_reap_locked();
	if (nbpf_cur) {
		NL_SET_ERR_MSG(extack, "a DPU link is already attached");
		return -EBUSY;
	}
	link = kzalloc(sizeof(*link), GFP_KERNEL);
	if (!link)
		return -ENOMEM;
	err = nbpf_link_init(link, key);
	if (err) {
		if (err != -ENOMEM)
			NL_SET_ERR_MSG(extack, "no gcm(aes) or cmac(aes) in this kernel (modules gcm, ghash-generic, ctr, cmac)");
		kfree(link);
		return err;
	}
	rtnl_lock();
	lower = __dev_get_by_name(net, ifname);
	if (!lower) {
		NL_SET_ERR_MSG(extack, "no such interface");
		err = -ENODEV;
	} else {
		err = nbpf_vdev_create(link, net, lower, vname, extack);
	}
	if (!err) {
		link->dbg = debugfs_create_dir(link->vdev->name, nbpf_dbg_root);
		debugfs_create_file("stats", 0444, link->dbg, link, &nbpf_stats_fops);
		debugfs_create_file("session", 0444, link->dbg, link, &nbpf_session_fops);
	}
	rtnl_unlock();
	if (err) {
		nbpf_link_free(link);
		return err;
	}
	nbpf_cur = link;
	err = nbpf_resync(link);
	if (err) {
		nbpf_attach_errmsg(err, extack);
		nbpf_detach_locked();
		return err;
	}
	nbpf_keepalive_arm();
	return 0;
}

void nbpf_detach_locked(void)
{
	struct nbpf_link *link = nbpf_cur;

	lockdep_assert_held(&nbpf_cfg_lock);
	if (!link)
		return;
	nbpf_cur = NULL;
	rtnl_lock();
	nbpf_link_unhook(link);
	rtnl_unlock();
	debugfs_remove(link->dbg);
	nbpf_mark_unsynced(NULL);
	nbpf_link_free(link);
}

/* Free a link whose lower device went away (the notifier unhooked it). */
void nbpf_reap_locked(void)
{
	lockdep_assert_held(&nbpf_cfg_lock);
	if (nbpf_cur && READ_ONCE(nbpf_cur->dead))
		nbpf_detach_locked();
}

static void nbpf_reap_fn(struct work_struct *work)
{
	mutex_lock(&nbpf_cfg_lock);
	nbpf_reap_locked();
	mutex_unlock(&nbpf_cfg_lock);
}

void nbpf_keepalive_arm(void)
{
	mod_delayed_work(system_long_wq, &nbpf_keepalive_work, msecs_to_jiffies(NBPF_KEEPALIVE_MS));
}

static void nbpf_keepalive_fn(struct work_struct *work)
{
	mutex_lock(&nbpf_cfg_lock);
	nbpf_reap_locked();
	if (nbpf_cur) {
		nbpf_probe(nbpf_cur);
		queue_delayed_work(system_long_wq, &nbpf_keepalive_work, msecs_to_jiffies(NBPF_KEEPALIVE_MS));
	}
	mutex_unlock(&nbpf_cfg_lock);
}

/* ---------------------------------------------------------------- netdev notifier (RTNL) */

static int nbpf_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *dev = netdev_notifier_info_to_dev(ptr);
	struct nbpf_link *link;

	if (nbpf_is_vdev(dev)) {
		link = ((struct nbpf_vpriv *)netdev_priv(dev))->link;
		if (event == NETDEV_CHANGENAME && link->hooked && !IS_ERR_OR_NULL(link->dbg))
			debugfs_rename(nbpf_dbg_root, link->dbg, nbpf_dbg_root, dev->name);
		return NOTIFY_DONE;
	}
	link = nbpf_lower_link(dev);
	if (!link || !link->hooked)
		return NOTIFY_DONE;
	switch (event) {
	case NETDEV_UNREGISTER:
		nbpf_link_unhook(link);
		schedule_work(&nbpf_reap_work);
		break;
	case NETDEV_UP:
	case NETDEV_DOWN:
	case NETDEV_CHANGE:
		netif_stacked_transfer_operstate(dev, link->vdev);
		break;
	case NETDEV_CHANGEMTU:
		link->vdev->max_mtu = dev->mtu > ETH_MIN_MTU + NBPF_SHIM_HLEN ?
				      dev->mtu - NBPF_SHIM_HLEN : ETH_MIN_MTU;
		if (link->vdev->mtu > link->vdev->max_mtu)
			dev_set_mtu(link->vdev, link->vdev->max_mtu);
		break;
	case NETDEV_PRE_TYPE_CHANGE:
		return notifier_from_errno(-EBUSY);
	}
	return NOTIFY_DONE;
}

static struct notifier_block nbpf_netdev_nb = {
	.notifier_call = nbpf_netdev_event,
};

/* ---------------------------------------------------------------- module */

static int __init nbpf_init(void)
{
	int err;

	nbpf_dbg_root = debugfs_create_dir("nanobpf", NULL);
	err = register_netdevice_notifier(&nbpf_netdev_nb);
	if (err)
		goto err_dbg;
	err = nbpf_genl_init();
	if (err)
		goto err_nb;
	pr_info("nanobpf: control EtherType 0x%04x, decrypt mark 0x%08x, encrypt mark base 0x%08x\n",
		NANOBPF_CTRL_ETHERTYPE, nbpf_decrypt_mark, nbpf_encrypt_mark);
	return 0;
err_nb:
	unregister_netdevice_notifier(&nbpf_netdev_nb);
err_dbg:
	debugfs_remove_recursive(nbpf_dbg_root);
	return err;
}

static void __exit nbpf_exit(void)
{
	nbpf_genl_exit();			/* waits for netlink requests in progress */
	cancel_delayed_work_sync(&nbpf_keepalive_work);
	mutex_lock(&nbpf_cfg_lock);
	nbpf_detach_locked();
	mutex_unlock(&nbpf_cfg_lock);
	unregister_netdevice_notifier(&nbpf_netdev_nb);
	cancel_work_sync(&nbpf_reap_work);
	mutex_lock(&nbpf_cfg_lock);
	nbpf_keys_free_all();
	kvfree(nbpf_prog_cur);
	nbpf_prog_cur = NULL;
	mutex_unlock(&nbpf_cfg_lock);
	rcu_barrier();
	debugfs_remove_recursive(nbpf_dbg_root);
}

module_init(nbpf_init);
module_exit(nbpf_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("NanoBPF DPU host driver: control protocol, key table, virtual netdev");
MODULE_AUTHOR("NanoBPF project");
