# Guest side of the power-cut test, first boot: a bundle is spooled onto
# the stick's STORCERT partition and the power goes mid-write.
set -u
mkdir -p /mnt && mount -t vfat /dev/vda /mnt || exit 9
mkdir -p /tmp/res && dd if=/dev/urandom of=/tmp/res/noise.bin bs=1M count=24 2>/dev/null
storcert keygen -s /tmp/k.key > /dev/null
storcert bundle create /tmp/res -o /tmp/cut.tar.zst -k /tmp/k.key > /dev/null
cp /tmp/k.key.pub /mnt/k.pub && sync
echo SPOOL-NOW > /dev/ttyS0
storcert upload /tmp/cut.tar.zst --to http://127.0.0.1:9/upload/ --allow-http --spool /mnt/spool --deadline 1s
echo SPOOL-DONE > /dev/ttyS0
sleep 60
