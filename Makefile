# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# mroce top-level Makefile.  `make help` lists the targets.
#
# The kernel module is built with Kbuild against KDIR; everything in
# userspace (provider, tools, tests) with CMake in $(BUILD).

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD ?= $(TOP)/build
MODDIR := $(TOP)/drivers/infiniband/sw/mroce
# The kernel-verbs self-test module (selftests/mroce/test_kverbs.sh).
KTESTDIR := $(TOP)/selftests/mroce/ktest
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# Kernel to build against: the running kernel when its headers are
# installed (a real Debian 12 host), else the newest installed Debian 6.1
# guest kernel with headers (the QEMU testbed).
KVER ?= $(shell k=$$(uname -r); if [ -e /lib/modules/$$k/build/Makefile ]; then echo $$k; \
	else ls /lib/modules 2>/dev/null | grep -E '^6\.1\.0-[0-9]+-amd64$$' | sort -V | \
	while read -r k; do [ -e /lib/modules/$$k/build/Makefile ] && echo $$k; done | tail -1; fi)
KDIR ?= /lib/modules/$(KVER)/build

.PHONY: all help setup module userspace check check-host check-guest demo install uninstall \
	clean checkpatch bench bench-qpmem bench-qpscale fuzz sim ns3 check-debug deb check-packages check-kernels check-rt

all: module userspace

help:
	@echo "make            build the kernel module (KVER=$(KVER)) and the userspace parts"
	@echo "make setup      install missing Debian packages (tools/setup.sh)"
	@echo "make check      setup + build + every test (host and QEMU guests)"
	@echo "make check-debug  guest selftests + stress on the KASAN/lockdep/kmemleak debug kernel"
	@echo "make check-kernels  build the module against every Debian 12 kernel flavour (tools/kernels.sh)"
	@echo "make check-rt   the guest selftests on Debian's PREEMPT_RT kernel (-rt-amd64)"
	@echo "make demo       setup + build + boot a guest and show mroce0 in ibv_devinfo"
	@echo "make install    install rdma_mroce.ko, libmroce-rdmav34.so, mroce.driver, mroce(7), mroce-paths,"
	@echo "                the Wireshark dissector [DESTDIR= PREFIX=]"
	@echo "make deb        Debian packages mroce-dkms, ibverbs-providers-mroce, mroce-tools -> DEB_OUT"
	@echo "make check-packages  build them, install them in a QEMU guest, use and remove them"
	@echo "make sim        fabric simulator scenarios -> SIM_OUT (CSV, PNG, summary.md)"
	@echo "make ns3        ns-3 model scenarios, mroce vs DCTCP/TCP/go-back-N -> NS3_OUT (needs libns3-dev)"
	@echo "make bench      two-guest bench, mroce vs rxe (bench/bench.sh; about 15-20 min under TCG)"
	@echo "make bench-qpmem  kernel memory per connected idle RC QP, 1000 QPs, mroce and rxe"
	@echo "                (bench/qp_memory.sh -> bench/results/qp-memory.md; a few min under TCG)"
	@echo "make bench-qpscale  N = 64..4000 connected RC QPs between two guests, traffic verified on"
	@echo "                every one, create/connect rates, mroce vs rxe, 1% loss, ib_write_bw -q 64/256"
	@echo "                (bench/qp_scale.sh -> bench/results/qp-scale.md; about 30-40 min under TCG)"
	@echo "make clean      remove build products"

setup:
	@$(TOP)/tools/setup.sh

module:
	@test -n "$(KVER)" -a -e "$(KDIR)/Makefile" || \
		{ echo "no kernel headers for '$(KVER)': run 'make setup'" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(MODDIR) CONFIG_RDMA_MROCE=m modules
	$(MAKE) -C $(KDIR) M=$(KTESTDIR) modules

$(BUILD)/CMakeCache.txt:
	cmake -S $(TOP) -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

userspace: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

checkpatch:
	@$(TOP)/tools/checkpatch.sh

# Fabric simulator scenarios: CSV, PNG and summary.md in SIM_OUT.
SIM_OUT ?= $(BUILD)/sim-results
sim: $(BUILD)/CMakeCache.txt
	BUILD=$(BUILD) $(TOP)/tools/sim/run_scenarios.sh $(SIM_OUT)

# The ns-3 model's scenarios (tools/ns3/README.md): CSV, PNG, summary.md in
# NS3_OUT.  NS3_ARGS=--quick for a short run.
NS3_OUT ?= $(BUILD)/ns3-results
ns3: $(BUILD)/CMakeCache.txt
	BUILD=$(BUILD) $(TOP)/tools/ns3/run_scenarios.sh $(NS3_OUT) $(NS3_ARGS)

check-host: all
	@$(TOP)/tools/check.sh host

check-guest: all
	@$(TOP)/tools/check.sh guest

check: setup
	@$(MAKE) --no-print-directory all
	@$(TOP)/tools/check.sh all

# The module against every kernel of tools/kernels.sh list (Debian's 6.1
# ABI as -amd64, -rt-amd64, -cloud-amd64, and its newest 6.12): built,
# skipped (why) or failed per kernel; a warning fails.  Headers other than
# the setup's are fetched into $(MROCE_CACHE)/kernels, not installed.
check-kernels: setup
	@$(TOP)/tools/kernels.sh build

# The guest selftests on Debian's -rt-amd64 kernel of the same ABI
# (selftests/run.sh with MROCE_KFLAVOUR=rt; SELFTESTS=... picks tests).
check-rt: setup
	@$(MAKE) --no-print-directory userspace
	@MROCE_KFLAVOUR=rt $(TOP)/selftests/run.sh --out $(BUILD)/check/rt $(SELFTESTS)

# The debug kernel lane (tools/debugkernel/README.md): builds or reuses it,
# builds the module against it, runs the guest selftests and the stress set.
check-debug: setup
	@$(MAKE) --no-print-directory userspace
	@$(TOP)/tools/check.sh debug

demo: setup
	@$(MAKE) --no-print-directory all
	@$(TOP)/tools/demo.sh

# DESTDIR: stage under a root (packaging; a relative one is taken from the
# directory make runs in); PREFIX: where the man page and mroce-paths
# (sbin) go (/usr/local unless given).  The module goes to
# /lib/modules/KVER/updates, the provider to the directory libibverbs loads
# from and the dissector to Wireshark's Lua plugin directory, whatever
# PREFIX.
PREFIX ?= /usr/local
DESTROOT = $(if $(DESTDIR),$(abspath $(DESTDIR)))
install: all
	$(MAKE) -C $(KDIR) M=$(MODDIR) CONFIG_RDMA_MROCE=m INSTALL_MOD_DIR=updates \
		INSTALL_MOD_PATH=$(DESTROOT) modules_install
	$(if $(DESTDIR),@echo "install: staged in $(DESTROOT); run depmod on the target",depmod -a $(KVER))
	DESTDIR=$(DESTROOT) cmake --install $(BUILD) --prefix $(abspath $(PREFIX))

uninstall:
	rm -f $(DESTROOT)/lib/modules/$(KVER)/updates/rdma_mroce.ko
	$(if $(DESTDIR),,depmod -a $(KVER))
	@# cmake's manifest names the files without DESTDIR
	@if [ -f $(BUILD)/install_manifest.txt ]; then \
		sed 's|^|$(DESTROOT)|' $(BUILD)/install_manifest.txt | xargs rm -fv; fi

# Debian packages (README, "Install"): built by dpkg-buildpackage from a
# copy of the sources, so the tree stays clean; the version is
# debian/changelog's.  check-packages installs them in a testbed guest
# (selftests/mroce/test_packages.sh).
DEB_OUT ?= $(BUILD)/deb
deb:
	@JOBS=$(JOBS) $(TOP)/tools/build-deb.sh $(DEB_OUT)

# The guest needs the host's userland (dpkg, dkms, gcc, headers): --hostroot;
# it sees the tree at /mroce, so DEB_OUT must be inside it.  About 30 min
# under TCG (the module's compile in the guest).
check-packages:
	@case "$(abspath $(DEB_OUT))/" in $(TOP)/*) ;; \
	*) echo "check-packages: DEB_OUT must be inside $(TOP)" >&2; exit 2 ;; esac
	@$(MAKE) --no-print-directory deb
	@$(TOP)/tools/testbed/tb run --quiet --hostroot --timeout 3600 --out $(BUILD)/check/packages \
		--env MROCE_DEB_DIR=/mroce/$(patsubst $(TOP)/%,%,$(abspath $(DEB_OUT))) \
		$(TOP)/selftests/mroce/run_guest.sh test_packages.sh

bench: all
	@$(TOP)/bench/bench.sh $(BENCH_ARGS)

bench-qpmem: all
	@$(TOP)/bench/qp_memory.sh

bench-qpscale: all
	@$(TOP)/bench/qp_scale.sh

# Long fuzzing run of the packet parser and the ACK/SACK engine (seconds
# per target); crashers land in build/fuzz/crashes (copy them into
# tests/fuzz/corpus/<target>/ as crash-<name>: the unit tests replay them).
FUZZ_SECONDS ?= 600
fuzz: setup
	@$(TOP)/tests/fuzz/run.sh $(FUZZ_SECONDS)

clean:
	-@[ -e "$(KDIR)/Makefile" ] && $(MAKE) -C $(KDIR) M=$(MODDIR) clean >/dev/null
	-@[ -e "$(KDIR)/Makefile" ] && $(MAKE) -C $(KDIR) M=$(KTESTDIR) clean >/dev/null
	rm -rf $(BUILD)
