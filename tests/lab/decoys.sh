# Guest side of the decoy test: every disk but the one blank target holds
# something the safety gate must refuse. Checksums before and after a
# destructive "all eligible drives" run must agree.
set -u
insmod_all() { :; }
mdadm --create /dev/md0 --level=1 --raid-devices=2 /dev/vdf missing --run --force --metadata=1.2 >> /results/setup.log 2>&1
# The degraded array as the inventory and the built-in check see it.
storcert inventory --json --no-probe > /results/md-inventory.json 2>> /results/setup.log
: > /tmp/empty.toml
storcert check --policy /tmp/empty.toml --json > /results/md-check.json 2>> /results/setup.log
mdadm --stop /dev/md0 >> /results/setup.log 2>&1
# md's other superblocks: 0.90 and 1.0 at the end of the disk, 1.1 at its
# start; each array made and stopped, leaving its member behind.
for m in "l 0.90" "m 1.0" "n 1.1"; do
  set -- $m
  mdadm --create /dev/md1 --level=1 --raid-devices=2 /dev/vd$1 missing --run --force --metadata=$2 >> /results/setup.log 2>&1
  mdadm --stop /dev/md1 >> /results/setup.log 2>&1
done
mkdir -p /mnt/ro
mount -o ro -t ext4 /dev/vdh /mnt/ro >> /results/setup.log 2>&1 || echo "mount failed" >> /results/setup.log
for d in /dev/vd?; do echo "$(sha256sum < $d | cut -d' ' -f1) $d"; done > /results/before.txt
storcert run --profile /lab/decoy.toml --results /tmp/r --key /tmp/k.key --cmdline /dev/null --plain > /results/run.out 2> /results/run.err
echo $? > /results/run.rc
for d in /dev/vd?; do echo "$(sha256sum < $d | cut -d' ' -f1) $d"; done > /results/after.txt
cp /tmp/r/run-*/targets.json /results/ 2>/dev/null
grep -c . /proc/mounts > /dev/null
