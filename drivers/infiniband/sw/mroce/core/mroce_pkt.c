// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * packet parser and builder.
 *
 * The parser trusts nothing: every length, every reserved bit, the
 * opcode/extension/flag consistency and the offset/length bounds are
 * checked before anything is reported to the caller.  It never reads
 * outside the buffer it is given and keeps no state (any context).
 */
#include "mroce_core.h"

/* Sizes of the on-wire structures: layout is fixed by the spec. */
static inline void mroce_pkt_size_checks(void)
{
	BUILD_BUG_ON(sizeof(struct mroce_bth) != MROCE_BTH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_reth) != MROCE_RETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_seth) != MROCE_SETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_imeth) != MROCE_IMETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_rreth) != MROCE_RRETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_aeth) != MROCE_AETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_atketh) != MROCE_ATKETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_acketh) != MROCE_ACKETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_deth) != MROCE_DETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_xrceth) != MROCE_XRCETH_SIZE);
	BUILD_BUG_ON(sizeof(struct mroce_ack_blk) != MROCE_ACK_BLK_SIZE);
	BUILD_BUG_ON(MROCE_ACK_MAX_BLKS * MROCE_ACK_BLK_SIZE >
		     MROCE_MAX_PAYLOAD);
	BUILD_BUG_ON(MROCE_SACK_BITS != MROCE_PATH_WND);
}

/* Payload rules. */
#define MROCE_PL_NONE	0	/* payload_len must be 0 */
#define MROCE_PL_DATA	1	/* 0..MROCE_MAX_PAYLOAD, bounded by total */
#define MROCE_PL_ACKBLK	2	/* ACK blocks (positive ACK only) */

struct mroce_op_desc {
	u8 valid;
	u8 payload;
	u16 flags_ok;		/* flags permitted for the opcode */
	u32 ext;
};

#define MROCE_DATA_FLAGS	(MROCE_F_ACKREQ | MROCE_F_FIRST | MROCE_F_LAST | \
				 MROCE_F_SOLICITED | MROCE_F_RETX | MROCE_F_TLP)
#define MROCE_REQ_FLAGS		(MROCE_F_ACKREQ | MROCE_F_FIRST | MROCE_F_LAST | \
				 MROCE_F_RETX | MROCE_F_TLP)

/* Requests an XRC initiator sends carry an XRCETH (not WRITE_IMM). */
#define MROCE_XDATA_FLAGS	(MROCE_DATA_FLAGS | MROCE_F_XRC)
#define MROCE_XREQ_FLAGS	(MROCE_REQ_FLAGS | MROCE_F_XRC)

#define MROCE_UD_FLAGS		(MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_SOLICITED)
/* UC: no ACKREQ (never acknowledged), no RETX/TLP (never resent). */
#define MROCE_UC_FLAGS		(MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_SOLICITED)
#define MROCE_UC_WR_FLAGS	(MROCE_F_FIRST | MROCE_F_LAST)

static const struct mroce_op_desc mroce_ops[MROCE_OP_UC_WRITE_IMM + 1] = {
	[MROCE_OP_SEND] = { 1, MROCE_PL_DATA, MROCE_XDATA_FLAGS,
			    MROCE_EXT_SETH },
	[MROCE_OP_SEND_IMM] = { 1, MROCE_PL_DATA, MROCE_XDATA_FLAGS,
				MROCE_EXT_SETH | MROCE_EXT_IMETH },
	[MROCE_OP_SEND_INV] = { 1, MROCE_PL_DATA, MROCE_XDATA_FLAGS,
				MROCE_EXT_SETH | MROCE_EXT_IMETH },
	[MROCE_OP_WRITE] = { 1, MROCE_PL_DATA, MROCE_XREQ_FLAGS,
			     MROCE_EXT_RETH },
	[MROCE_OP_WRITE_IMM] = { 1, MROCE_PL_DATA, MROCE_DATA_FLAGS,
				 MROCE_EXT_RETH | MROCE_EXT_SETH |
				 MROCE_EXT_IMETH },
	[MROCE_OP_READ_REQ] = { 1, MROCE_PL_NONE, MROCE_XREQ_FLAGS,
				MROCE_EXT_RETH },
	[MROCE_OP_READ_RESP] = { 1, MROCE_PL_DATA, MROCE_REQ_FLAGS,
				 MROCE_EXT_RRETH },
	[MROCE_OP_CMP_SWAP] = { 1, MROCE_PL_NONE, MROCE_XREQ_FLAGS,
				MROCE_EXT_AETH },
	[MROCE_OP_FETCH_ADD] = { 1, MROCE_PL_NONE, MROCE_XREQ_FLAGS,
				 MROCE_EXT_AETH },
	[MROCE_OP_ATOMIC_RESP] = { 1, MROCE_PL_NONE, MROCE_REQ_FLAGS,
				   MROCE_EXT_ATKETH },
	[MROCE_OP_ACK] = { 1, MROCE_PL_ACKBLK, 0, MROCE_EXT_ACKETH },
	[MROCE_OP_PROBE] = { 1, MROCE_PL_NONE, MROCE_F_ACKREQ, 0 },
	[MROCE_OP_UD_SEND] = { 1, MROCE_PL_DATA, MROCE_UD_FLAGS,
			       MROCE_EXT_DETH },
	[MROCE_OP_UD_SEND_IMM] = { 1, MROCE_PL_DATA, MROCE_UD_FLAGS,
				   MROCE_EXT_IMETH | MROCE_EXT_DETH },
	[MROCE_OP_UC_SEND] = { 1, MROCE_PL_DATA, MROCE_UC_FLAGS,
			       MROCE_EXT_SETH },
	[MROCE_OP_UC_SEND_IMM] = { 1, MROCE_PL_DATA, MROCE_UC_FLAGS,
				   MROCE_EXT_SETH | MROCE_EXT_IMETH },
	[MROCE_OP_UC_WRITE] = { 1, MROCE_PL_DATA, MROCE_UC_WR_FLAGS,
				MROCE_EXT_RETH },
	[MROCE_OP_UC_WRITE_IMM] = { 1, MROCE_PL_DATA, MROCE_UC_FLAGS,
				    MROCE_EXT_RETH | MROCE_EXT_SETH |
				    MROCE_EXT_IMETH },
};

/* Opcodes whose messages are cut into segments: the base header's seg. */
static bool mroce_op_segmented(u8 opcode)
{
	switch (opcode) {
	case MROCE_OP_SEND:
	case MROCE_OP_SEND_IMM:
	case MROCE_OP_SEND_INV:
	case MROCE_OP_WRITE:
	case MROCE_OP_WRITE_IMM:
	case MROCE_OP_READ_RESP:
		return true;
	default:
		return false;
	}
}

/* A segment size the wire can name (base header seg, ACKETH max_seg). */
static bool mroce_seg_valid(u32 seg)
{
	return !(seg % MROCE_SEG_UNIT) && seg >= MROCE_SEG_MIN &&
	       seg <= MROCE_MAX_PAYLOAD;
}

static const struct mroce_op_desc *mroce_op(u8 opcode)
{
	if (opcode >= ARRAY_SIZE(mroce_ops) || !mroce_ops[opcode].valid)
		return NULL;
	return &mroce_ops[opcode];
}

u32 mroce_op_ext(u8 opcode)
{
	const struct mroce_op_desc *d = mroce_op(opcode);

	return d ? d->ext : 0;
}

static u32 mroce_ext_len(u32 ext)
{
	u32 n = 0;

	if (ext & MROCE_EXT_RETH)
		n += MROCE_RETH_SIZE;
	if (ext & MROCE_EXT_SETH)
		n += MROCE_SETH_SIZE;
	if (ext & MROCE_EXT_IMETH)
		n += MROCE_IMETH_SIZE;
	if (ext & MROCE_EXT_RRETH)
		n += MROCE_RRETH_SIZE;
	if (ext & MROCE_EXT_AETH)
		n += MROCE_AETH_SIZE;
	if (ext & MROCE_EXT_ATKETH)
		n += MROCE_ATKETH_SIZE;
	if (ext & MROCE_EXT_ACKETH)
		n += MROCE_ACKETH_SIZE;
	if (ext & MROCE_EXT_DETH)
		n += MROCE_DETH_SIZE;
	if (ext & MROCE_EXT_XRCETH)
		n += MROCE_XRCETH_SIZE;
	return n;
}

u32 mroce_op_hdr_len(u8 opcode)
{
	const struct mroce_op_desc *d = mroce_op(opcode);

	return d ? MROCE_BTH_SIZE + mroce_ext_len(d->ext) : 0;
}

/*
 * The extensions of a packet: those of its opcode, and the XRCETH when
 * the flags ask for one and the opcode permits it (a flag it does not
 * permit fails the flag check, so the length never depends on it).
 */
static u32 mroce_pkt_ext(const struct mroce_op_desc *d, u16 flags)
{
	if ((flags & MROCE_F_XRC) && (d->flags_ok & MROCE_F_XRC))
		return d->ext | MROCE_EXT_XRCETH;
	return d->ext;
}

u32 mroce_pkt_hdr_len(const struct mroce_pkt *pkt)
{
	const struct mroce_op_desc *d = mroce_op(pkt->opcode);

	return d ? MROCE_BTH_SIZE +
		   mroce_ext_len(mroce_pkt_ext(d, pkt->flags)) : 0;
}

bool mroce_op_is_ud(u8 opcode)
{
	return opcode == MROCE_OP_UD_SEND || opcode == MROCE_OP_UD_SEND_IMM;
}

bool mroce_op_is_uc(u8 opcode)
{
	return opcode >= MROCE_OP_UC_SEND && opcode <= MROCE_OP_UC_WRITE_IMM;
}

bool mroce_op_is_data(u8 opcode)
{
	return mroce_op(opcode) && opcode != MROCE_OP_ACK &&
	       opcode != MROCE_OP_PROBE && !mroce_op_is_ud(opcode) &&
	       !mroce_op_is_uc(opcode);
}

static const char * const mroce_err_names[] = {
	"ok", "short buffer", "bad version", "unknown opcode", "bad flags",
	"reserved field not zero", "payload length mismatch",
	"payload not allowed or too large", "offset/length out of bounds",
	"ICRC mismatch", "path out of range", "invalid field",
	"no space", "invalid argument", "connection in error",
	"duplicate", "outside window", "no such message",
};

const char *mroce_strerror(int err)
{
	u32 i = err <= 0 ? (u32)-err : ~0U;

	if (i < ARRAY_SIZE(mroce_err_names))
		return mroce_err_names[i];
	return "unknown error";
}

/* Message total length of a data packet with extensions already parsed. */
static int mroce_pkt_total(const struct mroce_pkt *pkt, u32 *total)
{
	switch (pkt->opcode) {
	case MROCE_OP_SEND:
	case MROCE_OP_SEND_IMM:
	case MROCE_OP_SEND_INV:
	case MROCE_OP_UC_SEND:
	case MROCE_OP_UC_SEND_IMM:
		*total = pkt->seth.length;
		return 0;
	case MROCE_OP_WRITE:
	case MROCE_OP_UC_WRITE:
		*total = pkt->reth.length;
		return 0;
	case MROCE_OP_WRITE_IMM:
	case MROCE_OP_UC_WRITE_IMM:
		if (pkt->reth.length != pkt->seth.length)
			return MROCE_E_FIELD;
		*total = pkt->reth.length;
		return 0;
	case MROCE_OP_READ_RESP:
		*total = pkt->rresp_len;
		return 0;
	default:
		/* single packet requests/responses: no payload */
		*total = 0;
		return 0;
	}
}

/* The SACK bitmap (32 bytes, LSB first) and its consistency with cum_psn. */
static int mroce_parse_sack(const u8 *p, struct mroce_ack *a)
{
	u32 i, dist;

	for (i = 0; i < MROCE_SACK_WORDS; i++) {
		u64 w = 0;
		int b;

		for (b = 7; b >= 0; b--)
			w = (w << 8) | p[i * 8 + b];
		a->sack[i] = w;
	}
	/* cum_psn lies in the window [high - 256, high]. */
	dist = a->high_psn - a->cum_psn;
	if (dist > MROCE_SACK_BITS)
		return MROCE_E_FIELD;
	/* cum_psn itself is by definition missing when below high. */
	if (dist && (a->sack[(dist - 1) / 64] >> ((dist - 1) % 64) & 1))
		return MROCE_E_FIELD;
	return 0;
}

static void mroce_put_sack(u8 *p, const struct mroce_ack *a)
{
	u32 i, b;

	for (i = 0; i < MROCE_SACK_WORDS; i++)
		for (b = 0; b < 8; b++)
			p[i * 8 + b] = (u8)(a->sack[i] >> (8 * b));
}

static int mroce_parse_ack(const u8 *p, struct mroce_ack *a)
{
	a->high_psn = mroce_get_be32(p + 0);
	a->cum_psn = mroce_get_be32(p + 4);
	a->ecn_ce = mroce_get_be32(p + 8);
	a->echo_ts = mroce_get_be32(p + 12);
	a->cum_dsn = mroce_get_be32(p + 16);
	a->cmpl_msn = mroce_get_be32(p + 20);
	a->syndrome = p[24];
	a->rnr_timer = p[25];
	a->ack_delay_us = mroce_get_be32(p + 28);
	a->max_seg = mroce_get_be16(p + 26);
	if (a->max_seg && !mroce_seg_valid(a->max_seg))
		return MROCE_E_FIELD;
	if (a->syndrome > MROCE_SYN_MAX)
		return MROCE_E_FIELD;
	if ((a->rnr_timer && a->syndrome != MROCE_SYN_RNR) ||
	    a->rnr_timer > MROCE_RNR_TIMER_MAX)
		return MROCE_E_FIELD;
	return mroce_parse_sack(p + 32, a);
}

/*
 * Block k of an ACK parsed by mroce_pkt_parse() (which checked them all):
 * its path into *path, its fields over a copy of the ACKETH in *a.
 */
int mroce_ack_blk_get(const struct mroce_pkt *pkt, u32 k, u16 *path,
		      struct mroce_ack *a)
{
	const u8 *p;

	if (pkt->opcode != MROCE_OP_ACK || !pkt->payload ||
	    k >= pkt->payload_len / MROCE_ACK_BLK_SIZE)
		return MROCE_E_INVAL;
	p = pkt->payload + k * MROCE_ACK_BLK_SIZE;
	*a = pkt->ack;
	*path = mroce_get_be16(p);
	a->high_psn = mroce_get_be32(p + 4);
	a->cum_psn = mroce_get_be32(p + 8);
	a->ecn_ce = mroce_get_be32(p + 12);
	a->echo_ts = mroce_get_be32(p + 16);
	a->ack_delay_us = mroce_get_be32(p + 20);
	if (mroce_get_be16(p + 2) || *path >= MROCE_WIRE_MAX_PATHS)
		return MROCE_E_RSVD;
	return mroce_parse_sack(p + 24, a);
}

void mroce_ack_blk_put(u8 *p, u16 path, const struct mroce_ack *a)
{
	mroce_put_be16(p, path);
	mroce_put_be16(p + 2, 0);
	mroce_put_be32(p + 4, a->high_psn);
	mroce_put_be32(p + 8, a->cum_psn);
	mroce_put_be32(p + 12, a->ecn_ce);
	mroce_put_be32(p + 16, a->echo_ts);
	mroce_put_be32(p + 20, a->ack_delay_us);
	mroce_put_sack(p + 24, a);
}

/*
 * An ACK's blocks: whole blocks, only on a positive ACK, each valid, each
 * for a path of its own (not the base header's, no two alike).
 */
static int mroce_parse_ack_blks(const struct mroce_pkt *pkt)
{
	struct mroce_ack a;
	u64 seen = 1ULL << pkt->path;
	u32 k, n;
	u16 path;
	int ret;

	if (!pkt->payload_len)
		return 0;
	if (pkt->payload_len % MROCE_ACK_BLK_SIZE ||
	    pkt->ack.syndrome != MROCE_SYN_ACK)
		return MROCE_E_PAYLOAD;
	n = pkt->payload_len / MROCE_ACK_BLK_SIZE;
	if (n > MROCE_ACK_MAX_BLKS)
		return MROCE_E_PAYLOAD;
	for (k = 0; k < n; k++) {
		ret = mroce_ack_blk_get(pkt, k, &path, &a);
		if (ret)
			return ret;
		if (seen >> path & 1)
			return MROCE_E_PATH;
		seen |= 1ULL << path;
	}
	return 0;
}

int mroce_pkt_parse(const u8 *buf, u32 len, struct mroce_pkt *pkt)
{
	const struct mroce_op_desc *d;
	const u8 *p;
	u32 hdr, total, crc;
	int ret;

	mroce_pkt_size_checks();
	if (!buf || len < MROCE_MIN_PKT)
		return MROCE_E_SHORT;
	memset(pkt, 0, sizeof(*pkt));
	pkt->version = buf[0];
	pkt->opcode = buf[1];
	pkt->flags = mroce_get_be16(buf + 2);
	pkt->seg = (u16)(buf[4] * MROCE_SEG_UNIT);
	pkt->path = buf[5];
	pkt->payload_len = mroce_get_be16(buf + 6);
	pkt->adl = buf[8];
	pkt->dqpn = mroce_get_be32(buf + 8) & MROCE_QPN_MASK;
	pkt->psn = mroce_get_be32(buf + 12);
	pkt->dsn = mroce_get_be32(buf + 16);
	pkt->msn = mroce_get_be32(buf + 20);
	pkt->offset = mroce_get_be32(buf + 24);
	pkt->tx_ts = mroce_get_be32(buf + 28);

	if (pkt->version != MROCE_WIRE_VERSION)
		return MROCE_E_VERSION;
	d = mroce_op(pkt->opcode);
	if (!d)
		return MROCE_E_OPCODE;
	pkt->ext = mroce_pkt_ext(d, pkt->flags);
	hdr = MROCE_BTH_SIZE + mroce_ext_len(pkt->ext);
	if (len < hdr + MROCE_ICRC_SIZE)
		return MROCE_E_SHORT;
	if (pkt->payload_len != len - hdr - MROCE_ICRC_SIZE)
		return MROCE_E_LEN;
	crc = mroce_crc32c(0, buf, len - MROCE_ICRC_SIZE);
	if (crc != mroce_get_be32(buf + len - MROCE_ICRC_SIZE))
		return MROCE_E_ICRC;

	if (pkt->flags & ~MROCE_F_VALID_MASK)
		return MROCE_E_FLAGS;
	if (pkt->flags & ~d->flags_ok)
		return MROCE_E_FLAGS;
	if (pkt->path >= MROCE_WIRE_MAX_PATHS)
		return MROCE_E_PATH;
	if (pkt->seg && !mroce_op_segmented(pkt->opcode))
		return MROCE_E_RSVD;
	if (pkt->seg && !mroce_seg_valid(pkt->seg))
		return MROCE_E_FIELD;
	if (pkt->adl > MROCE_ADL_MAX)
		return MROCE_E_FIELD;
	if (pkt->adl && !mroce_op_is_data(pkt->opcode))
		return MROCE_E_RSVD;
	if (pkt->payload_len > MROCE_MAX_PAYLOAD)
		return MROCE_E_PAYLOAD;
	if (d->payload == MROCE_PL_NONE && pkt->payload_len)
		return MROCE_E_PAYLOAD;

	p = buf + MROCE_BTH_SIZE;
	if (d->ext & MROCE_EXT_RETH) {
		pkt->reth.va = mroce_get_be64(p);
		pkt->reth.rkey = mroce_get_be32(p + 8);
		pkt->reth.length = mroce_get_be32(p + 12);
		p += MROCE_RETH_SIZE;
	}
	if (d->ext & MROCE_EXT_SETH) {
		pkt->seth.rq_seq = mroce_get_be32(p);
		pkt->seth.length = mroce_get_be32(p + 4);
		p += MROCE_SETH_SIZE;
	}
	if (d->ext & MROCE_EXT_IMETH) {
		pkt->imm = mroce_get_be32(p);
		p += MROCE_IMETH_SIZE;
	}
	if (d->ext & MROCE_EXT_RRETH) {
		pkt->rresp_len = mroce_get_be32(p);
		if (mroce_get_be32(p + 4))
			return MROCE_E_RSVD;
		p += MROCE_RRETH_SIZE;
	}
	if (d->ext & MROCE_EXT_AETH) {
		pkt->aeth.va = mroce_get_be64(p);
		pkt->aeth.rkey = mroce_get_be32(p + 8);
		if (mroce_get_be32(p + 12))
			return MROCE_E_RSVD;
		pkt->aeth.swap = mroce_get_be64(p + 16);
		pkt->aeth.compare_add = mroce_get_be64(p + 24);
		if (pkt->aeth.va & 7)
			return MROCE_E_FIELD;
		if (pkt->opcode == MROCE_OP_FETCH_ADD && pkt->aeth.swap)
			return MROCE_E_RSVD;
		p += MROCE_AETH_SIZE;
	}
	if (d->ext & MROCE_EXT_ATKETH) {
		pkt->atomic_orig = mroce_get_be64(p);
		p += MROCE_ATKETH_SIZE;
	}
	if (d->ext & MROCE_EXT_ACKETH) {
		ret = mroce_parse_ack(p, &pkt->ack);
		if (ret)
			return ret;
		p += MROCE_ACKETH_SIZE;
	}
	if (d->ext & MROCE_EXT_DETH) {
		pkt->deth.qkey = mroce_get_be32(p);
		pkt->deth.src_qpn = mroce_get_be32(p + 4);
		if (pkt->deth.src_qpn & ~MROCE_QPN_MASK)
			return MROCE_E_FIELD;
		p += MROCE_DETH_SIZE;
	}
	if (pkt->ext & MROCE_EXT_XRCETH) {
		pkt->xrc_srqn = mroce_get_be32(p);
		if (pkt->xrc_srqn & ~MROCE_QPN_MASK)
			return MROCE_E_RSVD;
		p += MROCE_XRCETH_SIZE;
	}
	pkt->payload = pkt->payload_len ? p : NULL;

	if (mroce_op_is_ud(pkt->opcode)) {
		/* one packet: the whole datagram */
		if (pkt->path || pkt->dsn || pkt->msn || pkt->offset)
			return MROCE_E_RSVD;
		if ((pkt->flags & (MROCE_F_FIRST | MROCE_F_LAST)) !=
		    (MROCE_F_FIRST | MROCE_F_LAST))
			return MROCE_E_FLAGS;
		return 0;
	}
	if (mroce_op_is_uc(pkt->opcode)) {
		/*
		 * One path, no DSN, nothing to echo, no receive sequence:
		 * then the message checks of every data packet below.
		 */
		if (pkt->path || pkt->dsn || pkt->tx_ts)
			return MROCE_E_RSVD;
		if ((d->ext & MROCE_EXT_SETH) && pkt->seth.rq_seq)
			return MROCE_E_RSVD;
	} else if (!mroce_op_is_data(pkt->opcode)) {
		/* ACK/PROBE: no message position */
		if (pkt->offset)
			return MROCE_E_RSVD;
		if (d->payload == MROCE_PL_ACKBLK)
			return mroce_parse_ack_blks(pkt);
		return 0;
	}

	ret = mroce_pkt_total(pkt, &total);
	if (ret)
		return ret;
	if (d->payload == MROCE_PL_NONE) {
		/* single-packet request or response */
		if (pkt->offset)
			return MROCE_E_BOUNDS;
		if ((pkt->flags & (MROCE_F_FIRST | MROCE_F_LAST)) !=
		    (MROCE_F_FIRST | MROCE_F_LAST))
			return MROCE_E_FLAGS;
		if (pkt->opcode == MROCE_OP_READ_REQ &&
		    pkt->reth.length > MROCE_MAX_MSG_LEN)
			return MROCE_E_FIELD;
		return 0;
	}
	if (total > MROCE_MAX_MSG_LEN)
		return MROCE_E_FIELD;
	if ((u64)pkt->offset + pkt->payload_len > total)
		return MROCE_E_BOUNDS;
	if (!pkt->payload_len && pkt->offset != total)
		return MROCE_E_PAYLOAD;	/* empty packet must be the last */
	if (!!(pkt->flags & MROCE_F_FIRST) != (pkt->offset == 0))
		return MROCE_E_FLAGS;
	if (!!(pkt->flags & MROCE_F_LAST) !=
	    (pkt->offset + pkt->payload_len == total))
		return MROCE_E_FLAGS;
	return 0;
}

static void mroce_pkt_put_ack(u8 *p, const struct mroce_ack *a)
{
	mroce_put_be32(p + 0, a->high_psn);
	mroce_put_be32(p + 4, a->cum_psn);
	mroce_put_be32(p + 8, a->ecn_ce);
	mroce_put_be32(p + 12, a->echo_ts);
	mroce_put_be32(p + 16, a->cum_dsn);
	mroce_put_be32(p + 20, a->cmpl_msn);
	p[24] = a->syndrome;
	p[25] = a->rnr_timer;
	mroce_put_be16(p + 26, a->max_seg);
	mroce_put_be32(p + 28, a->ack_delay_us);
	mroce_put_sack(p + 32, a);
}

int mroce_pkt_build_hdr(u8 *buf, u32 buflen, const struct mroce_pkt *pkt)
{
	const struct mroce_op_desc *d = mroce_op(pkt->opcode);
	u32 hdr;
	u8 *p;

	if (!d)
		return MROCE_E_OPCODE;
	if (pkt->path >= MROCE_WIRE_MAX_PATHS ||
	    (pkt->seg && (!mroce_op_segmented(pkt->opcode) ||
			  !mroce_seg_valid(pkt->seg))) ||
	    (d->ext & MROCE_EXT_ACKETH && pkt->ack.max_seg &&
	     !mroce_seg_valid(pkt->ack.max_seg)) ||
	    pkt->dqpn & ~MROCE_QPN_MASK ||
	    pkt->adl > MROCE_ADL_MAX ||
	    (pkt->adl && !mroce_op_is_data(pkt->opcode)) ||
	    pkt->flags & ~MROCE_F_VALID_MASK ||
	    (pkt->flags & MROCE_F_XRC && !(d->flags_ok & MROCE_F_XRC)) ||
	    (pkt->flags & MROCE_F_XRC && pkt->xrc_srqn & ~MROCE_QPN_MASK) ||
	    pkt->payload_len > MROCE_MAX_PAYLOAD ||
	    (d->payload == MROCE_PL_NONE && pkt->payload_len))
		return MROCE_E_INVAL;
	hdr = MROCE_BTH_SIZE + mroce_ext_len(mroce_pkt_ext(d, pkt->flags));
	if (!buf || buflen < hdr)
		return MROCE_E_NOSPC;

	buf[0] = MROCE_WIRE_VERSION;
	buf[1] = pkt->opcode;
	mroce_put_be16(buf + 2, pkt->flags);
	buf[4] = (u8)(pkt->seg / MROCE_SEG_UNIT);
	buf[5] = (u8)pkt->path;
	mroce_put_be16(buf + 6, pkt->payload_len);
	mroce_put_be32(buf + 8, (u32)pkt->adl << 24 | pkt->dqpn);
	mroce_put_be32(buf + 12, pkt->psn);
	mroce_put_be32(buf + 16, pkt->dsn);
	mroce_put_be32(buf + 20, pkt->msn);
	mroce_put_be32(buf + 24, pkt->offset);
	mroce_put_be32(buf + 28, pkt->tx_ts);
	p = buf + MROCE_BTH_SIZE;
	if (d->ext & MROCE_EXT_RETH) {
		mroce_put_be64(p, pkt->reth.va);
		mroce_put_be32(p + 8, pkt->reth.rkey);
		mroce_put_be32(p + 12, pkt->reth.length);
		p += MROCE_RETH_SIZE;
	}
	if (d->ext & MROCE_EXT_SETH) {
		mroce_put_be32(p, pkt->seth.rq_seq);
		mroce_put_be32(p + 4, pkt->seth.length);
		p += MROCE_SETH_SIZE;
	}
	if (d->ext & MROCE_EXT_IMETH) {
		mroce_put_be32(p, pkt->imm);
		p += MROCE_IMETH_SIZE;
	}
	if (d->ext & MROCE_EXT_RRETH) {
		mroce_put_be32(p, pkt->rresp_len);
		mroce_put_be32(p + 4, 0);
		p += MROCE_RRETH_SIZE;
	}
	if (d->ext & MROCE_EXT_AETH) {
		mroce_put_be64(p, pkt->aeth.va);
		mroce_put_be32(p + 8, pkt->aeth.rkey);
		mroce_put_be32(p + 12, 0);
		mroce_put_be64(p + 16, pkt->aeth.swap);
		mroce_put_be64(p + 24, pkt->aeth.compare_add);
		p += MROCE_AETH_SIZE;
	}
	if (d->ext & MROCE_EXT_ATKETH) {
		mroce_put_be64(p, pkt->atomic_orig);
		p += MROCE_ATKETH_SIZE;
	}
	if (d->ext & MROCE_EXT_ACKETH) {
		mroce_pkt_put_ack(p, &pkt->ack);
		p += MROCE_ACKETH_SIZE;
	}
	if (d->ext & MROCE_EXT_DETH) {
		mroce_put_be32(p, pkt->deth.qkey);
		mroce_put_be32(p + 4, pkt->deth.src_qpn);
		p += MROCE_DETH_SIZE;
	}
	if (pkt->flags & MROCE_F_XRC)
		mroce_put_be32(p, pkt->xrc_srqn);
	return (int)hdr;
}

int mroce_pkt_seal(u8 *buf, u32 len, u32 buflen)
{
	if (!buf || len > buflen || buflen - len < MROCE_ICRC_SIZE)
		return MROCE_E_NOSPC;
	mroce_put_be32(buf + len, mroce_crc32c(0, buf, len));
	return (int)(len + MROCE_ICRC_SIZE);
}

int mroce_pkt_build(u8 *buf, u32 buflen, const struct mroce_pkt *pkt)
{
	int hdr = mroce_pkt_build_hdr(buf, buflen, pkt);

	if (hdr < 0)
		return hdr;
	if (buflen - hdr < (u32)pkt->payload_len + MROCE_ICRC_SIZE)
		return MROCE_E_NOSPC;
	if (pkt->payload_len) {
		if (!pkt->payload)
			return MROCE_E_INVAL;
		memcpy(buf + hdr, pkt->payload, pkt->payload_len);
	}
	return mroce_pkt_seal(buf, hdr + pkt->payload_len, buflen);
}
