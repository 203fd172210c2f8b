# shellcheck shell=bash
# Shared by the libvirt end-to-end test (tests/e2e/libvirt-fleet) and the
# demo (demo/libvirt-guest): a real libvirtd started by hand (these machines
# have no systemd), TCG domains running the test guest (tests/guest), and
# the run-guest state folders that let tests/guest/run-guest talk to them.
#
# Functions print what failed on stderr and return non-zero; the caller
# decides. Everything they start is recorded under the caller's state folder
# so lv_cleanup stops exactly that, by pid.

lv_uri=qemu:///system
lv_run_dir=/run/libvirt/qemu

# The libvirtd and virtlogd pid files of a daemon started by hand.
lv_libvirtd_pidfile=/run/libvirtd.pid
lv_virtlogd_pidfile=/run/virtlogd.pid

# True if PID runs (a zombie, dead but not yet waited for, does not).
lv_pid_alive() {
    local st
    [ -n "${1:-}" ] || return 1
    st=$(awk '$1 == "State:" { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ]
}

# lv_stop_pid PID: SIGTERM, then SIGKILL if PID still runs 10 s later.
lv_stop_pid() {
    local pid=$1 deadline=$((SECONDS + 10))
    lv_pid_alive "$pid" || return 0
    kill "$pid" 2>/dev/null || return 0
    while lv_pid_alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    if lv_pid_alive "$pid"; then
        echo "process $pid ignored SIGTERM for 10 s: killed" >&2
        kill -9 "$pid" 2>/dev/null || true
    fi
}

lv_pidfile_pid() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    lv_pid_alive "$pid" || return 1
    echo "$pid"
}

# lv_can_run: libvirtd and QEMU are installed and we are root (the system
# libvirtd needs it). Prints why not on stderr.
lv_can_run() {
    local tool
    for tool in libvirtd virtlogd virsh qemu-system-x86_64; do
        command -v "$tool" >/dev/null 2>&1 || { echo "$tool is not installed" >&2; return 1; }
    done
    [ "$(id -u)" -eq 0 ] || { echo "the system libvirtd needs root" >&2; return 1; }
}

# lv_wait_up [TIMEOUT_S]: wait until libvirtd answers.
lv_wait_up() {
    local deadline=$((SECONDS + ${1:-30}))
    until virsh -q -c "$lv_uri" version >/dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || { echo "libvirtd did not answer within ${1:-30} s" >&2; return 1; }
        sleep 0.3
    done
}

# lv_start_daemons STATE: start virtlogd and libvirtd unless they run; the
# ones started here are recorded in STATE so lv_stop_daemons stops only them.
lv_start_daemons() {
    local state=$1 pid
    if ! lv_pidfile_pid "$lv_virtlogd_pidfile" >/dev/null; then
        virtlogd -d || { echo "cannot start virtlogd" >&2; return 1; }
        sleep 0.3
        pid=$(lv_pidfile_pid "$lv_virtlogd_pidfile") || { echo "virtlogd did not start" >&2; return 1; }
        echo "$pid" >"$state/virtlogd.started"
    fi
    if ! lv_pidfile_pid "$lv_libvirtd_pidfile" >/dev/null; then
        libvirtd -d || { echo "cannot start libvirtd" >&2; return 1; }
        lv_wait_up 30 || return 1
        pid=$(lv_pidfile_pid "$lv_libvirtd_pidfile") || { echo "libvirtd did not start" >&2; return 1; }
        echo "$pid" >"$state/libvirtd.started"
    else
        lv_wait_up 30 || return 1
    fi
}

# lv_restart_libvirtd STATE: stop libvirtd by its pid and start it again (the
# domains keep running: QEMU does not belong to libvirtd's process).
lv_restart_libvirtd() {
    local state=$1 pid deadline
    pid=$(lv_pidfile_pid "$lv_libvirtd_pidfile") || { echo "no libvirtd runs" >&2; return 1; }
    kill "$pid"
    deadline=$((SECONDS + 30))
    while lv_pid_alive "$pid"; do
        [ $SECONDS -lt $deadline ] || { echo "libvirtd $pid did not stop" >&2; return 1; }
        sleep 0.2
    done
    libvirtd -d || { echo "cannot start libvirtd again" >&2; return 1; }
    lv_wait_up 30 || return 1
    # It is ours to stop now, whoever started the first one.
    lv_pidfile_pid "$lv_libvirtd_pidfile" >"$state/libvirtd.started"
}

# lv_stop_daemons STATE: stop the daemons lv_start_daemons started.
lv_stop_daemons() {
    local state=$1 name pid deadline
    for name in libvirtd virtlogd; do
        [ -f "$state/$name.started" ] || continue
        pid=$(cat "$state/$name.started")
        if lv_pid_alive "$pid"; then
            kill "$pid"
            deadline=$((SECONDS + 20))
            while lv_pid_alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
            lv_pid_alive "$pid" && kill -9 "$pid"
        fi
        rm -f "$state/$name.started"
    done
}

# lv_prepare_images STATE IMAGE: copy the guest kernel and initramfs into
# STATE, which libvirt's QEMU (user libvirt-qemu) must be able to read.
lv_prepare_images() {
    local state=$1 image=$2
    chmod 0755 "$state"
    cp "$image/vmlinuz" "$image/initramfs.cpio.gz" "$state/" || return 1
    chmod 0644 "$state/vmlinuz" "$state/initramfs.cpio.gz"
}

# lv_domain_xml STATE NAME MEM_MIB SMP APPEND METADATA: a TCG domain running
# the test guest, with a cache=none swap disk, the console on a unix socket
# logged to a file, the agent channel and free page reporting. Its run-guest
# state folder is STATE/NAME. A reboot (or virsh reset) destroys it unless
# lv_on_reboot=restart (the fault test reboots a guest).
#
# ACPI is on, as in run-guest's QEMU. Without it (libvirt's default) the
# guest has no HPET or PM timer to calibrate its TSC against, keeps time with
# jiffies (4 ms steps: every sub-millisecond latency reads 0) and, having no
# table that lists its CPUs, brings up ONE CPU whatever SMP says. With ACPI it
# brings up all SMP vCPUs: two domains of two vCPUs each are four TCG threads
# on a two-core host, where a vCPU waiting for another's IPI (TLB shootdowns
# of reclaim) waits for a host time slice (docs/benchmarks-vm.md).
#
# The vCPUs are cores of one socket, as run-guest's `-smp N` makes them:
# libvirt's default is one socket per vCPU, and with two sockets the test
# guest ran vr-memload at a quarter of run-guest's speed (0.25 against 1.06
# Mops/s, p50 1.44 against 0.59 us: most likely a slower clock source, the
# TSC not trusted across sockets; docs/benchmarks-vm.md).
lv_domain_xml() {
    local state=$1 name=$2 mem=$3 smp=$4 append=$5 metadata=$6
    local dir=$state/$name
    cat <<EOF
<domain type='qemu'>
  <name>$name</name>
  <memory unit='MiB'>$mem</memory>
  <vcpu>$smp</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>$state/vmlinuz</kernel>
    <initrd>$state/initramfs.cpio.gz</initrd>
    <cmdline>console=ttyS0 panic=-1 quiet vr.swap=disk $append</cmdline>
  </os>
  <features><acpi/><apic/></features>
  <cpu mode='custom' match='exact'><model fallback='allow'>qemu64</model><topology sockets='1' dies='1' cores='$smp' threads='1'/><feature policy='require' name='rdrand'/></cpu>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>${lv_on_reboot:-destroy}</on_reboot>
  <on_crash>destroy</on_crash>
  <metadata>
    $metadata
  </metadata>
  <devices>
    <emulator>$(command -v qemu-system-x86_64)</emulator>
    <disk type='file' device='disk'>
      <driver name='qemu' type='raw' cache='none' io='threads'/>
      <source file='$dir/swap.img'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <controller type='usb' model='none'/>
    <serial type='unix'>
      <source mode='bind' path='$dir/console.sock'/>
      <log file='$dir/console.log'/>
      <target port='0'/>
    </serial>
    <channel type='unix'>
      <target type='virtio' name='org.vreclaim.agent.0'/>
    </channel>
    <memballoon model='virtio' freePageReporting='on'/>
  </devices>
</domain>
EOF
}

# lv_start_domain STATE NAME MEM_MIB SMP APPEND METADATA: create (transient)
# and start the domain; STATE/NAME becomes its run-guest state folder
# (qemu.pid, mem_bytes, console.sock, console.log).
lv_start_domain() {
    local state=$1 name=$2 mem=$3 dir=$1/$2 pid
    mkdir -p "$dir"
    chmod 0777 "$dir" # QEMU (libvirt-qemu) makes its console socket here
    truncate -s 2G "$dir/swap.img"
    lv_domain_xml "$@" >"$dir/domain.xml"
    virsh -q -c "$lv_uri" create "$dir/domain.xml" >/dev/null || { echo "cannot start domain $name" >&2; return 1; }
    echo "$name" >>"$state/domains"
    pid=$(cat "$lv_run_dir/$name.pid") || { echo "no pid file for domain $name" >&2; return 1; }
    echo "$pid" >"$dir/qemu.pid"
    echo $((mem * 1024 * 1024)) >"$dir/mem_bytes"
    echo "$name" >"$dir/libvirt-domain"
}

# lv_stop_domains STATE: destroy every domain lv_start_domain started; a
# QEMU that libvirt cannot stop (libvirtd gone or stuck) is killed by its pid
# once it is checked to be that domain's.
lv_stop_domains() {
    local state=$1 name pid
    [ -f "$state/domains" ] || return 0
    while read -r name; do
        timeout 60 virsh -q -c "$lv_uri" destroy "$name" >/dev/null 2>&1 || true
        pid=$(lv_qemu_pid "$state" "$name") || continue
        if tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "guest=$name,"; then
            kill "$pid" 2>/dev/null || true
        fi
    done <"$state/domains"
    rm -f "$state/domains"
}

# lv_qemu_pid STATE NAME: the pid of the domain's QEMU, if it runs.
lv_qemu_pid() {
    lv_pidfile_pid "$1/$2/qemu.pid"
}
