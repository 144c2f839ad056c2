// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * Unreliable connected (UC) messages: segmentation at the sender and the
 * receiver's rule for telling a complete message from a broken one.
 *
 * UC packets travel on one path (one UDP source port per QP pair), so the
 * network keeps them in order, and nothing is ever resent.  The receiver
 * therefore assembles one message at a time and needs no per-packet
 * state: a message is complete when its packets arrived contiguously from
 * offset 0 (FIRST) to its length (LAST), each repeating the first one's
 * opcode, length, address, key and immediate.  Anything else (a packet
 * missing, reordered or inconsistent) abandons the message, which is then
 * never completed.  The receiver keeps no buffer and no timer: a message
 * whose tail is lost is abandoned when the next message starts.
 *
 * Pure functions on caller memory (see mroce_core.h for the contract).
 */
#include "mroce_core.h"

void mroce_uc_rx_init(struct mroce_uc_rx *u, u32 isn_rx, u32 mtu)
{
	memset(u, 0, sizeof(*u));
	u->msn_nxt = mroce_isn_start(isn_rx & MROCE_ISN_MASK, MROCE_ISN_MSN);
	u->mtu = min_t(u32, mtu, MROCE_MAX_PAYLOAD);
}

/* Total message length of a parsed UC packet. */
static u32 mroce_uc_len(const struct mroce_pkt *pkt)
{
	return pkt->ext & MROCE_EXT_RETH ? pkt->reth.length : pkt->seth.length;
}

/* Abandon the message being assembled. */
static void mroce_uc_drop_live(struct mroce_uc_rx *u, struct mroce_uc_step *st)
{
	if (!u->live)
		return;
	u->live = false;
	u->broken++;
	st->aborted = true;
}

/* Does pkt repeat the fields of the message being assembled? */
static bool mroce_uc_same(const struct mroce_uc_rx *u,
			  const struct mroce_pkt *pkt)
{
	if (pkt->opcode != u->opcode || mroce_uc_len(pkt) != u->length)
		return false;
	if ((pkt->ext & MROCE_EXT_RETH) &&
	    (pkt->reth.va != u->va || pkt->reth.rkey != u->rkey))
		return false;
	if ((pkt->ext & MROCE_EXT_IMETH) && pkt->imm != u->imm)
		return false;
	return true;
}

/* pkt was accepted at u->next_off: advance, complete on the last one. */
static void mroce_uc_advance(struct mroce_uc_rx *u, const struct mroce_pkt *pkt,
			     struct mroce_uc_step *st)
{
	u->next_off += pkt->payload_len;
	if (pkt->flags & MROCE_F_LAST) {
		st->last = true;
		u->live = false;
	}
}

int mroce_uc_rx_pkt(struct mroce_uc_rx *u, const struct mroce_pkt *pkt,
		struct mroce_uc_step *st)
{
	memset(st, 0, sizeof(*st));
	if (!mroce_op_is_uc(pkt->opcode))
		return MROCE_E_OPCODE;

	if (u->live && pkt->msn == u->msn) {
		/* A later packet of the message being assembled. */
		if (pkt->offset < u->next_off)
			return MROCE_E_DUP;	/* seen: a network copy */
		if (!mroce_uc_same(u, pkt)) {
			mroce_uc_drop_live(u, st);
			return MROCE_E_FIELD;
		}
		if (pkt->offset != u->next_off) {
			mroce_uc_drop_live(u, st);
			return MROCE_E_BOUNDS;	/* one before it is lost */
		}
		if (pkt->payload_len > u->mtu) {
			mroce_uc_drop_live(u, st);
			return MROCE_E_PAYLOAD;
		}
		mroce_uc_advance(u, pkt, st);
		return 0;
	}

	/*
	 * Another message.  Only MSNs ahead of the last one seen count:
	 * older ones are copies or forgeries and change nothing.
	 */
	if (pkt->msn - u->msn_nxt >= MROCE_UC_MSN_WND)
		return MROCE_E_WINDOW;
	/* The one being assembled lost its tail (one path keeps order). */
	mroce_uc_drop_live(u, st);
	u->msn_nxt = pkt->msn + 1;
	if (!(pkt->flags & MROCE_F_FIRST)) {
		/* Its first packet was lost: the whole message is. */
		u->broken++;
		return MROCE_E_NOMSG;
	}
	if (pkt->payload_len > u->mtu) {
		u->broken++;
		return MROCE_E_PAYLOAD;
	}
	u->live = true;
	u->opcode = pkt->opcode;
	u->msn = pkt->msn;
	u->length = mroce_uc_len(pkt);
	u->va = pkt->ext & MROCE_EXT_RETH ? pkt->reth.va : 0;
	u->rkey = pkt->ext & MROCE_EXT_RETH ? pkt->reth.rkey : 0;
	u->imm = pkt->ext & MROCE_EXT_IMETH ? pkt->imm : 0;
	u->next_off = 0;
	st->first = true;
	mroce_uc_advance(u, pkt, st);
	return 0;
}

void mroce_uc_rx_abort(struct mroce_uc_rx *u)
{
	u->live = false;	/* refused, not broken: not counted */
}

int mroce_uc_seg(const struct mroce_uc_msg *m, u32 off, u32 mtu, u32 dqpn,
		 u32 psn, struct mroce_pkt *pkt)
{
	u32 n;

	if (!mroce_op_is_uc(m->opcode) || m->length > MROCE_MAX_MSG_LEN ||
	    !mtu || mtu > MROCE_MAX_PAYLOAD || dqpn & ~MROCE_QPN_MASK ||
	    off % mtu || (off >= m->length && (off || m->length)))
		return MROCE_E_INVAL;
	n = min_t(u32, mtu, m->length - off);

	memset(pkt, 0, sizeof(*pkt));
	pkt->version = MROCE_WIRE_VERSION;
	pkt->opcode = m->opcode;
	pkt->ext = mroce_op_ext(m->opcode);
	pkt->dqpn = dqpn;
	pkt->psn = psn;
	pkt->msn = m->msn;
	pkt->offset = off;
	pkt->payload_len = (u16)n;
	if (!off)
		pkt->flags |= MROCE_F_FIRST;
	if (off + n == m->length) {
		pkt->flags |= MROCE_F_LAST;
		if (m->solicited && m->opcode != MROCE_OP_UC_WRITE)
			pkt->flags |= MROCE_F_SOLICITED;
	}
	if (pkt->ext & MROCE_EXT_RETH) {
		pkt->reth.va = m->va;
		pkt->reth.rkey = m->rkey;
		pkt->reth.length = m->length;
	}
	if (pkt->ext & MROCE_EXT_SETH)
		pkt->seth.length = m->length;
	if (pkt->ext & MROCE_EXT_IMETH)
		pkt->imm = m->imm;
	return (int)n;
}
