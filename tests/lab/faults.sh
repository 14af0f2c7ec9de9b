# Device faults: a dm-flakey device that errors half the time, a dm-delay
# device with 1.5 s of latency, and a SCSI disk deleted in the middle of a
# two-drive run. Each run must end (no hang) with a verdict and a bundle.
set -u
export DM_DISABLE_UDEV=1
N=$(blockdev --getsz /dev/vda)
# Healthy (up an hour) until its ACT run has written a first report, then
# up 1 s, down 1 s: the safety gate's read at the start cannot meet a down
# second (it would refuse the drive as unreadable), however slow the host.
FLAKY_TABLE="0 $N flakey /dev/vda 0 1 1"
dmsetup create flaky --noudevsync --table "0 $N flakey /dev/vda 0 3600 0" > /results/dm.log 2>&1
N=$(blockdev --getsz /dev/vdb)
dmsetup create slow --noudevsync --table "0 $N delay /dev/vdb 0 1500" >> /results/dm.log 2>&1
dmsetup mknodes >> /results/dm.log 2>&1
ls -l /dev/mapper >> /results/dm.log 2>&1
for p in flaky slow unplug; do
  if [ "$p" = flaky ]; then
    ( for _ in $(seq 1 480); do
        log=$(find /tmp/flaky -name '*-1x.log' 2>/dev/null | head -n 1)
        if [ -n "$log" ] && grep -q "^after 1 sec:" "$log"; then break; fi
        sleep 0.5
      done
      dmsetup suspend --noudevsync flaky && \
        dmsetup reload --noudevsync flaky --table "$FLAKY_TABLE" && \
        dmsetup resume --noudevsync flaky
      echo "flaky from now: $?" >> /results/dm.log ) &
  fi
  if [ "$p" = unplug ]; then
    # Deleted once its ACT run has written its first report, so the disk
    # goes away in the middle of the run however slow the host is.
    ( for _ in $(seq 1 480); do
        log=$(find /tmp/unplug -name sda-1x.log 2>/dev/null | head -n 1)
        if [ -n "$log" ] && grep -q "^after 1 sec:" "$log"; then break; fi
        sleep 0.5
      done
      echo 1 > /sys/block/sda/device/delete; echo "deleted sda" > /results/unplug.log ) &
  fi
  timeout 240 storcert run --profile /lab/$p.toml --results /tmp/$p --key /tmp/k.key --cmdline /dev/null --plain \
    > /results/$p.out 2> /results/$p.err
  echo $? > /results/$p.rc
  mkdir -p /results/$p-bundle
  cp /tmp/$p/spool/pending/* /results/$p-bundle/ 2>/dev/null
done
cp /tmp/k.key.pub /results/
