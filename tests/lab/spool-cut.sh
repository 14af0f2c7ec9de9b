# Guest side of the power-cut test, first boot: a bundle (made by the test
# on the host, in /lab) is spooled onto the stick's STORCERT partition and
# the power goes mid-write.
set -u
mkdir -p /mnt && mount -t vfat /dev/vda /mnt || exit 9
cp /lab/k.key.pub /mnt/k.pub && sync
echo SPOOL-NOW > /dev/ttyS0
# Nothing listens: the upload keeps the bundle in the spool and says so.
storcert upload /lab/cut.tar.zst --to http://127.0.0.1:9/upload/ --allow-http --spool /mnt/spool --deadline 1s 2> /tmp/upload.err
if grep -q "kept in the spool" /tmp/upload.err; then
  echo SPOOL-DONE > /dev/ttyS0
else
  echo "SPOOL-FAILED: $(cat /tmp/upload.err)" > /dev/ttyS0
fi
sleep 60
