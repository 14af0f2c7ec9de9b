# Second boot after the power cut: what the spool holds, opened (torn
# temporaries removed), every pending bundle verified.
set -u
mkdir -p /mnt && mount -t vfat /dev/vda /mnt || exit 9
ls -a /mnt/spool/pending > /results/pending-before.txt 2>&1
storcert upload --to http://127.0.0.1:9/upload/ --allow-http --spool /mnt/spool --deadline 1s > /results/upload.out 2>&1
ls -a /mnt/spool/pending > /results/pending-after.txt 2>&1
for b in /mnt/spool/pending/*.tar.zst; do
  [ -e "$b" ] || continue
  storcert bundle verify "$b" -p /mnt/k.pub > /results/verify.out 2>&1; echo $? > /results/verify.rc
done
umount /mnt
