/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * pabi34.h - our declarations of the libibverbs provider interface at
 * private ABI 34 (symbol version IBVERBS_PRIVATE_34: rdma-core 34 to 56,
 * Debian 12 ships 44).
 *
 * rdma-core does not install its provider headers, so the few structures
 * and functions a provider needs are declared here, from the published ABI,
 * and their layouts are pinned by static assertions (x86_64 values).  C only:
 * the layouts depend on C semantics.
 */
#ifndef MROCE_PABI34_H
#define MROCE_PABI34_H

#ifdef __cplusplus
#error "pabi34.h is the C edge of the provider; do not include it from C++"
#endif

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>
#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct verbs_sysfs_dev;		/* opaque: only passed back to libibverbs */
/*
 * A match-table entry.  mroce matches with match_device() and passes an
 * empty table (a lone sentinel): libibverbs walks every provider's table
 * without a NULL check when it matches devices that have a driver_id.
 */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;			/* 0: sentinel */
};

struct mroce_list_node {
	struct mroce_list_node *next, *prev;
};

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device, int cmd_fd,
					       void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device, int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

struct verbs_device {
	struct ibv_device device;	/* first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct mroce_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

struct verbs_mr {
	struct ibv_mr ibv_mr;
	uint32_t mr_type;		/* enum ibv_mr_type */
	int access;
};

/* An entry of verbs_context_ops that mroce leaves to libibverbs' default. */
typedef void (*mroce_unset_op)(void);

/* The 76 operations, in ABI order; NULL means "not supported". */
struct verbs_context_ops {
	mroce_unset_op advise_mr, alloc_dm;
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	mroce_unset_op alloc_null_mr, alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	mroce_unset_op alloc_td, async_event, attach_counters_point_flow, attach_mcast;
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	mroce_unset_op cq_event;
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	mroce_unset_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel, int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	mroce_unset_op create_flow, create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	mroce_unset_op create_rwq_ind_table;
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	mroce_unset_op create_wq;
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	mroce_unset_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	mroce_unset_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	mroce_unset_op destroy_flow, destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	mroce_unset_op destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	mroce_unset_op destroy_wq, detach_mcast;
	void (*free_context)(struct ibv_context *context);
	mroce_unset_op free_dm;
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	mroce_unset_op import_dm, import_mr, import_pd, modify_cq, modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	mroce_unset_op modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr, int attr_mask);
	mroce_unset_op modify_wq;
	struct ibv_qp *(*open_qp)(struct ibv_context *context, struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
	mroce_unset_op post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	mroce_unset_op query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	mroce_unset_op query_qp_data_in_order;
	int (*query_rt_values)(struct ibv_context *context, struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
	mroce_unset_op read_counters, reg_dm_mr, reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
			size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	mroce_unset_op set_ece, unimport_dm, unimport_mr, unimport_pd;
};

/*
 * A QP as libibverbs sees it: ibv_qp_to_qp_ex() casts every ibv_qp of the
 * provider to this and returns &qp_ex only when comp_mask has VERBS_QP_EX,
 * so every mroce QP starts with one (comp_mask 0 for ibv_create_qp QPs).
 */
struct verbs_xrcd;
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};
#define MROCE_VERBS_QP_EX	(1u << 1)	/* VERBS_QP_EX */

/* An XRC domain; handle is the uverbs object's. */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

/* An SRQ; ibv_cmd_create_srq_ex() fills srq_type, xrcd, cq and srq_num. */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* A CQ: ibv_cq_ex_to_cq() is a cast, the two share their first members. */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* Layouts measured on rdma-core 44 (x86_64). */
static_assert(sizeof(struct verbs_qp) == 368, "verbs_qp layout");
static_assert(offsetof(struct verbs_qp, comp_mask) == sizeof(struct ibv_qp_ex), "verbs_qp layout");
static_assert(sizeof(struct verbs_cq) == 288, "verbs_cq layout");
static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent layout");
static_assert(offsetof(struct verbs_match_ent, kind) == 20, "verbs_match_ent layout");
static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops layout");
static_assert(offsetof(struct verbs_device_ops, match_device) == 32, "match_device offset");
static_assert(sizeof(struct verbs_device) == 712, "verbs_device layout");
static_assert(sizeof(struct verbs_context_ops) == 76 * sizeof(void *), "verbs_context_ops layout");
static_assert(offsetof(struct verbs_context_ops, req_notify_cq) == 69 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, resize_cq) == 71 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, alloc_pd) == 5 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, alloc_mw) == 2 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, bind_mw) == 10 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, dealloc_mw) == 25 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, poll_cq) == 53 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, create_cq_ex) == 16 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, create_qp_ex) == 20 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, query_rt_values) == 63 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(sizeof(struct verbs_context) == 648, "verbs_context layout");
static_assert(offsetof(struct verbs_context_ops, close_xrcd) == 11 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, create_srq_ex) == 23 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, get_srq_num) == 41 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, open_qp) == 51 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_context_ops, open_xrcd) == 52 * sizeof(void *),
	      "verbs_context_ops order");
static_assert(offsetof(struct verbs_xrcd, handle) == sizeof(struct ibv_xrcd) + 4,
	      "verbs_xrcd layout");
static_assert(offsetof(struct verbs_srq, srq_num) == sizeof(struct ibv_srq) + 24,
	      "verbs_srq layout");

/* Write-command buffers: the uverbs header then the core payload; driver
 * data follows in the caller's buffer and is sized by cmd_size. */
#define MROCE_CMD(_name, _core)				\
	struct _name {					\
		struct ib_uverbs_cmd_hdr hdr;		\
		struct _core core_payload;		\
	}
MROCE_CMD(ibv_get_context, ib_uverbs_get_context);
MROCE_CMD(ibv_query_port, ib_uverbs_query_port);
MROCE_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
MROCE_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
MROCE_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr);
MROCE_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
MROCE_CMD(ibv_create_cq, ib_uverbs_create_cq);
MROCE_CMD(ibv_resize_cq, ib_uverbs_resize_cq);
MROCE_CMD(ibv_create_qp, ib_uverbs_create_qp);
MROCE_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
MROCE_CMD(ibv_query_qp, ib_uverbs_query_qp);
MROCE_CMD(ibv_create_srq, ib_uverbs_create_srq);
MROCE_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
MROCE_CMD(ibv_query_srq, ib_uverbs_query_srq);
MROCE_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd);
MROCE_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq);
MROCE_CMD(ibv_open_qp, ib_uverbs_open_qp);
static_assert(sizeof(struct ibv_rereg_mr) == 56, "ibv_rereg_mr layout");
static_assert(sizeof(struct ibv_create_cq) == 40, "ibv_create_cq layout");
static_assert(sizeof(struct ibv_resize_cq) == 24, "ibv_resize_cq layout");
static_assert(sizeof(struct ibv_create_qp) == 64, "ibv_create_qp layout");
static_assert(sizeof(struct ibv_create_srq) == 40, "ibv_create_srq layout");
static_assert(sizeof(struct ibv_modify_srq) == 24, "ibv_modify_srq layout");
static_assert(sizeof(struct ibv_query_srq) == 24, "ibv_query_srq layout");

/* libibverbs functions for providers (IBVERBS_PRIVATE_34). */
void verbs_register_driver_34(const struct verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...) __attribute__((format(printf, 4, 5)));
int ibv_cmd_get_context(struct verbs_context *context, struct ibv_get_context *cmd,
			size_t cmd_size, struct ib_uverbs_get_context_resp *resp, size_t resp_size);
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp, size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr, struct ibv_query_port *cmd, size_t cmd_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd, struct ibv_alloc_pd *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va, int access,
		   struct verbs_mr *vmr, struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr, size_t length,
		     uint64_t hca_va, int access, struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type, struct ibv_mw *mw,
		     struct ibv_alloc_mw *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe, struct ibv_comp_channel *channel,
		      int comp_vector, struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp, size_t resp_size);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd, size_t cmd_size,
		      struct ib_uverbs_resize_cq_resp *resp, size_t resp_size);
int ibv_cmd_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq, struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp, size_t resp_size);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask,
		       struct ibv_modify_srq *cmd, size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex, struct ibv_create_xsrq *cmd,
			  size_t cmd_size, struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd, int vxrcd_size,
		      struct ibv_xrcd_init_attr *attr, struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp, int vqp_sz,
		    struct ibv_qp_open_attr *attr, struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp, struct ibv_qp_init_attr *attr,
		      struct ibv_create_qp *cmd, size_t cmd_size,
		      struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex, struct ibv_create_qp *cmd,
			 size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr, int attr_mask,
		     struct ibv_qp_init_attr *qp_init_attr, struct ibv_query_qp *cmd,
		     size_t cmd_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
		      struct ibv_modify_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
int ibv_cmd_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah, struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);

#endif /* MROCE_PABI34_H */
