# Guest side of the dual-port test: one namespace behind two controllers
# of one NVMe subsystem. Native multipath shows a head and two hidden
# paths; the head's number is not stable from boot to boot, so it is
# waited for by its shape.
set -u
for _ in $(seq 1 240); do
  ls /sys/block | grep -qE '^nvme[0-9]+n[0-9]+$' && break
  sleep 0.25
done
ls /sys/block > /results/block.txt
for b in /sys/block/*; do echo "$(basename $b) $(cat $b/hidden 2>/dev/null)"; done > /results/hidden.txt
storcert inventory --json > /results/inventory.json 2> /results/inventory.err
storcert run --profile /lab/dual-port.toml --results /tmp/r --key /tmp/k.key --cmdline /dev/null --plain \
  > /results/run.out 2> /results/run.err
echo $? > /results/run.rc
cp /tmp/r/run-*/targets.json /tmp/r/run-*/summary.json /results/ 2>/dev/null
true
