#!/usr/bin/env bash
# Run the fact modules against a real NVIDIA driver and capture the raw outputs they parse, into $OUT/capture.tar.gz.
# Made for the `device` tool's H200 machine (no network there: ansible-core travels as wheels in .whl/):
#   tests/hardware/capture.sh <name>          e.g. h200-1gpu-busy
# A torch process holds ~20 GiB on GPU 0, pinned by UUID in CUDA_VISIBLE_DEVICES, while the busy captures run.
set -u
name=${1:-capture}
out=${OUT:-/tmp/out}
dir=/tmp/capture/$name
mkdir -p "$dir" "$out"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
fi
mkdir -p /tmp/ac/ansible_collections/specdec && ln -sfn "$PWD" /tmp/ac/ansible_collections/specdec/bench
# The tree callback (ansible-core's own) writes each host's result as one JSON file.
export ANSIBLE_COLLECTIONS_PATH=/tmp/ac ANSIBLE_LOAD_CALLBACK_PLUGINS=1 ANSIBLE_CALLBACKS_ENABLED=ansible.builtin.tree
export ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 LC_ALL=C.UTF-8
py=$(command -v python3)
fields=index,uuid,name,pci.bus_id,driver_version,memory.total,memory.used,memory.free,utilization.gpu,utilization.memory,temperature.gpu,power.draw,power.limit,pstate,compute_cap,persistence_mode,mig.mode.current,ecc.mode.current,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,clocks.sm,clocks.max.sm,serial,vbios_version,display_mode,compute_mode
apps=pid,process_name,gpu_uuid,gpu_bus_id,used_memory

capture_smi() {  # $1: suffix
  nvidia-smi > "$dir/smi_$1.txt" 2>&1; echo $? > "$dir/smi_$1.rc"
  nvidia-smi --query-gpu=$fields --format=csv > "$dir/query_gpu_csv_$1.txt" 2>&1
  nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits > "$dir/query_gpu_nh_$1.txt" 2>&1
  nvidia-smi --query-compute-apps=$apps --format=csv,noheader,nounits > "$dir/apps_$1.txt" 2>&1
  nvidia-smi --query-compute-apps=$apps --format=csv > "$dir/apps_csv_$1.txt" 2>&1
}
run_module() {  # $1: output name, $2: module, $3: args
  ANSIBLE_CALLBACK_TREE_DIR="$dir/tree-$1" ansible localhost -c local -e "ansible_python_interpreter=$py" -m "$2" -a "$3" \
    > "$dir/$1.stdout" 2> "$dir/$1.stderr"
  echo "$1: rc=$?"
  mv "$dir/tree-$1/localhost" "$dir/$1.json" && rmdir "$dir/tree-$1"
}

nvidia-smi -L > "$dir/smi_L.txt" 2>&1
nvidia-smi --version > "$dir/version.txt" 2>&1
nvidia-smi topo -m > "$dir/topo.txt" 2>&1
nvidia-smi nvlink -s > "$dir/nvlink.txt" 2>&1
nvidia-smi -q -x > "$dir/q_xml.txt" 2>&1
nvidia-smi --query-gpu=index,no.such.field --format=csv > "$dir/query_gpu_badfield.txt" 2>&1; echo $? > "$dir/query_gpu_badfield.rc"
capture_smi idle
run_module gpu_facts_idle specdec.bench.gpu_facts "backend=smi"

uuid=$(nvidia-smi --query-gpu=uuid --format=csv,noheader -i 0)
rm -f /tmp/holder.ready
CUDA_VISIBLE_DEVICES=$uuid python3 -c "
import time, torch
x = torch.empty(20 * 2**30, dtype=torch.uint8, device='cuda')
open('/tmp/holder.ready', 'w').write('ok')
time.sleep(300)" > "$dir/holder.log" 2>&1 &
holder=$!
for _ in $(seq 600); do [ -e /tmp/holder.ready ] && break; sleep 0.2; done
echo "holder pid $holder ready=$(cat /tmp/holder.ready 2>/dev/null)" | tee "$dir/holder.txt"
cat /proc/$holder/cgroup > "$dir/holder_cgroup.txt" 2>&1
tr '\0' ' ' < /proc/$holder/cmdline >> "$dir/holder_cgroup.txt"
capture_smi busy
run_module gpu_facts_smi specdec.bench.gpu_facts "backend=smi"
run_module gpu_facts_nvml specdec.bench.gpu_facts "backend=nvml"
run_module host_facts specdec.bench.host_facts "paths=/root/bench_results,/tmp python_envs=$py"
run_module unit_facts specdec.bench.unit_facts "names=ssh,sglang-*"
[ -f plugins/modules/probe.py ] && run_module probe specdec.bench.probe "units=sglang-* paths=/root/bench_results python_envs=$py"
kill $holder; wait $holder 2>/dev/null
capture_smi after
tar -C /tmp/capture -czf "$out/capture.tar.gz" "$name"
ls -la "$dir"
