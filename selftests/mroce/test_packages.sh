#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The Debian packages (make deb, README "Install") on the guest: dpkg
# installs mroce-dkms, ibverbs-providers-mroce and mroce-tools from
# build/deb; mroce-dkms' postinst has DKMS build rdma_mroce for the guest's
# kernel from /usr/src/mroce-VERSION (a real compile, the slow part under
# TCG); the kernel-upgrade hook (/etc/kernel/postinst.d/dkms, AUTOINSTALL)
# puts the module back after `dkms uninstall`; modprobe loads the
# installed module; `rdma link add` makes a device on each end of a veth
# pair between two network namespaces and ibv_rc_pingpong (payload
# checked) runs between them with the INSTALLED provider (RDMAV_DRIVERS
# unset; the dynamic loader must map /usr/lib/<triplet>/libibverbs/
# libmroce-rdmav34.so); the installed dissector is in tshark's protocols;
# then dpkg -r and --purge must leave nothing: no DKMS entry, no module,
# no source, no provider, no driver file, no file named *mroce* anywhere.
#
# Needs the host's userland (dpkg, dkms, gcc, the guest kernel's headers):
# tb --hostroot, which `make check-packages` uses.  dpkg needs a writable
# root: the script re-runs itself in a private mount namespace with tmpfs
# overlays on /usr, /etc and /var (the host's stay read-only and untouched;
# everything installed vanishes with the namespace).  man-db's index update
# is switched off in the overlay (a trigger that would rescan every manual
# page over 9p under TCG).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

debdir=${MROCE_DEB_DIR:-$MROCE_BUILD/deb}
kver=$(uname -r)
triplet=x86_64-linux-gnu
pkgs=(mroce-dkms ibverbs-providers-mroce mroce-tools)
provider=/usr/lib/$triplet/libibverbs/libmroce-rdmav34.so
driver_file=/etc/libibverbs.d/mroce.driver
dkms_ko=/lib/modules/$kver/updates/dkms/rdma_mroce.ko

if [ -z "${MROCE_PKG_NS:-}" ]; then
	missing=
	for c in dpkg dkms gcc make unshare; do
		command -v "$c" >/dev/null || missing+=" $c"
	done
	[ -e "/lib/modules/$kver/build/include" ] || missing+=" linux-headers-$kver"
	if [ -n "$missing" ]; then
		tb_skip "packages" "missing in the guest:$missing (needs the host's userland: tb --hostroot, make check-packages)"
		exit 0
	fi
	debs=()
	for p in "${pkgs[@]}"; do
		d=$(find "$debdir" -maxdepth 1 -name "${p}_*.deb" 2>/dev/null | sort -V | tail -1)
		if [ -z "$d" ]; then
			tb_not_ok "packages: $p in $debdir" "no ${p}_*.deb: run make deb first"
			exit 1
		fi
		debs+=("$d")
	done
	exec env MROCE_PKG_NS=1 MROCE_PKG_DEBS="${debs[*]}" \
		unshare --mount --propagation private bash "$0" "$@"
fi
read -r -a debs <<<"$MROCE_PKG_DEBS"
version=$(dpkg-deb -f "${debs[0]}" Version)
export DEBIAN_FRONTEND=noninteractive
# The provider must come from where the package put it.
unset RDMAV_DRIVERS

# ---- a writable root -----------------------------------------------------
ovl=/tmp/mroce-pkgroot
ok_root=1
modprobe overlay || ok_root=0
for d in usr etc var; do
	mkdir -p "$ovl/$d/upper" "$ovl/$d/work"
	mount -t overlay "mroce-pkg-$d" \
		-o "lowerdir=/$d,upperdir=$ovl/$d/upper,workdir=$ovl/$d/work" "/$d" || ok_root=0
done
if [ $ok_root = 1 ] && touch /var/lib/dpkg/.mroce-probe /usr/.mroce-probe /etc/.mroce-probe; then
	rm -f /var/lib/dpkg/.mroce-probe /usr/.mroce-probe /etc/.mroce-probe
	tb_ok "packages: writable root (overlays on /usr /etc /var)"
else
	tb_not_ok "packages: writable root (overlays on /usr /etc /var)" "overlay mount failed"
	exit 1
fi
rm -f /var/lib/man-db/auto-update
# The guest's devtmpfs lacks the links udev makes: dkms (bash process
# substitution) needs /dev/fd.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd

# A module from an earlier test of this run would hide the installed one.
if mroce_loaded && ! mroce_unload; then
	tb_not_ok "packages: no rdma_mroce loaded before the install" "rmmod failed"
	exit 1
fi

# ---- install: dkms builds the module for this kernel ----------------------
t0=$SECONDS
if timeout "$(mroce_t 2700)" dpkg -i "${debs[@]}" >/tmp/mroce-dpkg-i.log 2>&1; then
	tb_ok "packages: dpkg -i ${pkgs[*]} ($version)"
else
	tb_not_ok "packages: dpkg -i ${pkgs[*]} ($version)" "dpkg failed"
	sed 's/^/# dpkg: /' /tmp/mroce-dpkg-i.log | tail -30
	tail -30 "/var/lib/dkms/mroce/$version/build/make.log" 2>/dev/null | sed 's/^/# make.log: /'
fi
echo "# packages: dpkg -i (DKMS build included) took $((SECONDS - t0)) s"
grep -E "Building|Done|Skipped|Installing|Signing|Sign command" /tmp/mroce-dpkg-i.log | sed 's/^/# dpkg: /'

st=$(dkms status -m mroce -v "$version" -k "$kver" 2>&1)
echo "# dkms status: $st"
if [[ "$st" == "mroce/$version, $kver, "*": installed"* ]]; then
	tb_ok "packages: dkms status: mroce/$version installed for $kver"
else
	tb_not_ok "packages: dkms status: mroce/$version installed for $kver" "got '$st'"
fi
if [ "$(modinfo -F vermagic "$dkms_ko" 2>/dev/null | awk '{print $1}')" = "$kver" ] &&
   [ "$(modinfo -n rdma_mroce 2>/dev/null)" = "$dkms_ko" ]; then
	tb_ok "packages: modprobe finds the DKMS module $dkms_ko (vermagic $kver)"
else
	tb_not_ok "packages: modprobe finds the DKMS module $dkms_ko (vermagic $kver)" \
		"modinfo -n: '$(modinfo -n rdma_mroce 2>&1)'"
fi
files_ok=1
for f in "$provider" "$driver_file" /usr/sbin/mroce-paths /usr/share/man/man7/mroce.7.gz \
	 /usr/lib/$triplet/wireshark/plugins/mroce.lua "/usr/src/mroce-$version/dkms.conf"; do
	[ -s "$f" ] || { echo "# missing: $f"; files_ok=0; }
done
if [ $files_ok = 1 ] && grep -qx 'driver mroce' "$driver_file" && [ -x /usr/sbin/mroce-paths ]; then
	tb_ok "packages: provider, driver file, mroce-paths, mroce(7), dissector, DKMS source installed"
else
	tb_not_ok "packages: provider, driver file, mroce-paths, mroce(7), dissector, DKMS source installed"
fi

# ---- a new kernel: the hook dkms installs in /etc/kernel/postinst.d ------
# AUTOINSTALL=yes is what makes `dkms autoinstall` (run by the hook for
# every kernel the system installs) put the module in place; without the
# module installed for this kernel, the hook must install it again.
if dkms uninstall -m mroce -v "$version" -k "$kver" >/tmp/mroce-dkms-un.log 2>&1 && [ ! -e "$dkms_ko" ] &&
   timeout "$(mroce_t 1800)" /etc/kernel/postinst.d/dkms "$kver" >/tmp/mroce-hook.log 2>&1 &&
   [ -s "$dkms_ko" ] &&
   [[ "$(dkms status -m mroce -v "$version" -k "$kver")" == *": installed"* ]]; then
	tb_ok "packages: the kernel postinst hook (dkms autoinstall) reinstalls the module"
else
	tb_not_ok "packages: the kernel postinst hook (dkms autoinstall) reinstalls the module"
	cat /tmp/mroce-dkms-un.log /tmp/mroce-hook.log | sed 's/^/# /' | tail -20
fi

# ---- use it --------------------------------------------------------------
tb_modprobe_rdma >/dev/null 2>&1
check "packages: modprobe rdma_mroce" modprobe rdma_mroce
# Debian's kernel has no srcversion (MODULE_SRCVERSION_ALL off): compare
# the GNU build ID of the loaded module (the note's last 20 bytes in
# sysfs) with the installed file's.
id_file=$(readelf -n "$dkms_ko" 2>/dev/null | awk '/Build ID:/ {print $3}')
id_loaded=$(od -An -v -tx1 /sys/module/rdma_mroce/notes/.note.gnu.build-id 2>/dev/null | tr -d ' \n' | tail -c 40)
if [ ${#id_file} = 40 ] && [ "$id_loaded" = "$id_file" ]; then
	tb_ok "packages: the loaded module is the DKMS-built one (build ID $id_file)"
else
	tb_not_ok "packages: the loaded module is the DKMS-built one" "build ID loaded '$id_loaded', file '$id_file'"
fi

tb_netns_pair
check "packages: rdma link add mroce_a type mroce netdev va (ns_a)" \
	ip netns exec ns_a rdma link add mroce_a type mroce netdev va
check "packages: rdma link add mroce_b type mroce netdev vb (ns_b)" \
	ip netns exec ns_b rdma link add mroce_b type mroce netdev vb
ga=$(tb_wait_gid mroce_a) || ga=
gb=$(tb_wait_gid mroce_b) || gb=
if [ -n "$ga" ] && [ -n "$gb" ]; then
	tb_ok "packages: both devices have a RoCE v2 GID"
else
	tb_not_ok "packages: both devices have a RoCE v2 GID" "mroce_a '$ga', mroce_b '$gb'"
fi

# libibverbs finds the device through the installed driver file and loads
# the installed provider.
dl=$(LD_DEBUG=files ibv_devinfo -d mroce_a 2>&1)
if grep -q "file=$provider " <<<"$dl" && grep -qE "hca_id:[[:space:]]+mroce_a" <<<"$dl"; then
	tb_ok "packages: ibv_devinfo loads the installed provider $provider"
else
	tb_not_ok "packages: ibv_devinfo loads the installed provider $provider"
	grep -E "libmroce|error|Warning|No IB|fail" <<<"$dl" | head -5 | sed 's/^/# /'
fi

pp="packages: ibv_rc_pingpong 4 KiB x 100, payload checked"
pair "$pp" \
	ibv_rc_pingpong -d mroce_b -g "${gb:-0}" -n 100 -s 4096 -c -- \
	env LD_DEBUG=files ibv_rc_pingpong -d mroce_a -g "${ga:-0}" -n 100 -s 4096 -c 10.12.0.2
if grep -q "file=$provider " "$log/$pp.cli" && grep -q "100 iters in" "$log/$pp.cli"; then
	tb_ok "packages: the pingpong client ran 100 iterations on the installed provider"
else
	tb_not_ok "packages: the pingpong client ran 100 iterations on the installed provider"
fi

if command -v tshark >/dev/null; then
	lua=/usr/lib/$triplet/wireshark/plugins/mroce.lua
	if tshark -G plugins 2>/dev/null | grep -q "[[:space:]]$lua\$" &&
	   tshark -G protocols 2>/dev/null | awk -F'\t' '$3 == "mroce" {f = 1} END {exit !f}'; then
		tb_ok "packages: tshark loads the installed dissector $lua (protocol mroce)"
	else
		tb_not_ok "packages: tshark loads the installed dissector $lua (protocol mroce)"
	fi
else
	tb_skip "packages: tshark loads the installed dissector" "no tshark"
fi

mroce_netns_teardown
check "packages: modprobe -r rdma_mroce" wait_for modprobe -r rdma_mroce

# ---- remove, then purge: nothing may be left ------------------------------
if dpkg -r "${pkgs[@]}" >/tmp/mroce-dpkg-r.log 2>&1; then
	tb_ok "packages: dpkg -r"
else
	tb_not_ok "packages: dpkg -r" "$(tail -5 /tmp/mroce-dpkg-r.log)"
fi
st=$(dkms status -m mroce 2>&1)
left=
for f in "$dkms_ko" "/var/lib/dkms/mroce" "/usr/src/mroce-$version" "$provider" /usr/sbin/mroce-paths; do
	[ -e "$f" ] && left+=" $f"
done
if [ -z "$st" ] && [ -z "$left" ]; then
	tb_ok "packages: after dpkg -r no DKMS entry, module, source, provider or tool"
else
	tb_not_ok "packages: after dpkg -r no DKMS entry, module, source, provider or tool" \
		"dkms status '$st', left:$left"
fi
# The driver file is a conffile: dpkg -r keeps it, --purge removes it.
if dpkg --purge "${pkgs[@]}" >/tmp/mroce-dpkg-p.log 2>&1; then
	tb_ok "packages: dpkg --purge"
else
	tb_not_ok "packages: dpkg --purge" "$(tail -5 /tmp/mroce-dpkg-p.log)"
fi
# Whatever dpkg, dkms or depmod wrote lands in the overlays' upper layers:
# no file there may still carry mroce's name (char devices are the
# overlay's whiteouts of deletions).
left=$(find "$ovl"/*/upper \( -iname '*mroce*' ! -type c \) -print 2>/dev/null)
known=$(dpkg-query -W -f '${Package} ${db:Status-Abbrev}\n' "${pkgs[@]}" 2>/dev/null | awk '$2 != "un"')
if [ -z "$left" ] && [ -z "$known" ] && [ ! -e "$driver_file" ]; then
	tb_ok "packages: after dpkg --purge no file named *mroce* and no package record left"
else
	tb_not_ok "packages: after dpkg --purge no file named *mroce* and no package record left" \
		"left: ${left//$'\n'/ } ${driver_file}: $([ -e "$driver_file" ] && echo present) dpkg: $known"
fi
