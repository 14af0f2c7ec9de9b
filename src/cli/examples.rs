//! Examples of each command: the end of its `--help`, and its man page's
//! EXAMPLES section (`storcert man` renames clap's extra section).

pub const STORCERT: &str = "\
Examples:
  storcert run                                 the quick profile on a scratch file (no disk needed)
  storcert run --profile burn-in --dry-run     what a burn-in would destroy and run, writing nothing
  storcert inventory                           the machine's drives and controllers
  storcert act search -d /dev/nvme1n1          the highest ACT load the drive passes
  storcert report BUNDLE -o report.html        a bundle's report, verified with -p KEY.pub";

pub const INVENTORY: &str = "\
Examples:
  storcert inventory                           every disk and controller (as root)
  storcert inventory -d /dev/nvme0n1 --json    one drive, as JSON
  storcert inventory --capture hw.tar.zst      also keep what was read, to send in when a drive misreads";

pub const CHECK: &str = "\
Examples:
  storcert check --policy policy.toml          this machine against a policy; exit 1 on a failed rule
  storcert check --policy policy.toml --fix --dry-run
                                               the write-cache changes --fix would make
  storcert check --policy p.toml --inventory inventory.json
                                               a saved inventory (a bundle's) instead of this machine";

pub const RUN: &str = "\
Examples:
  storcert run                                 the quick profile on a scratch file
  storcert run | tee verdict.txt               the verdict on standard output, progress on standard error
  storcert run --profile qualify.toml --dry-run
                                               the drives it would destroy and every stage, with the time
  storcert run --profile burn-in               every drive the safety gate clears, unattended, resumable";

pub const ACT_STORAGE: &str = "\
Examples:
  storcert act storage -d /dev/nvme1n1 --load 12x --duration 24h --log act.log
                                               ACT at 12x for a day; the verdict at the end, exit 1 on fail
  storcert act storage act_storage.conf --log act.log
                                               an ACT 6.x config, as is
  storcert act storage -d drive.img --file-size-mbytes 1024 --engine null --null-latency 2ms --load 4x --duration 30s
                                               the scheduler and the judge on a drive whose latency you set";

pub const ACT_ANALYZE: &str = "\
Examples:
  storcert act analyze act.log                 act_latency.py's table and ACT's verdict (a run under an hour: one slice)
  storcert act analyze act.log -t 600 -x       ten-minute slices, with each slice's rate
  storcert act analyze -l act.log --json       the tables and verdict as JSON";

pub const ACT_SEARCH: &str = "\
Examples:
  storcert act search -d /dev/nvme1n1 --max 60x --trial 10m --confirm 24h
                                               escalate 1x, 2x, 4x …, bisect, confirm the load found";

pub const ACT_PREP: &str = "\
Examples:
  storcert act prep /dev/nvme1n1               zero, then salt the whole drive (it is destroyed)";

pub const STREAM: &str = "\
Examples:
  storcert stream -d /dev/sdb --size 64G --verify
                                               write then read 64 GB, every block checked
  storcert stream -d /dev/sdb --output-format fio-json > sdb.json
                                               fio's JSON, for fio's own tools
  storcert stream --dd -d /dev/sdb             dd's single stream and its summary lines";

pub const REPORT: &str = "\
Examples:
  storcert report BUNDLE -p key.pub -o report.html
                                               verify the bundle's signature, then its report
  storcert report RESULTS_FOLDER --format md   a results folder as Markdown";

pub const COMPARE: &str = "\
Examples:
  storcert compare run-a run-b bundle.tar.zst  each drive's loads side by side, with and without spare area
  storcert compare RUN... --layout writeup     ACT's write-ups' table: avg and max over 1 … 64 ms per load
  storcert compare RUN... --format csv > loads.csv
                                               one row per run of a drive at a load, for a spreadsheet";

pub const BUNDLE: &str = "\
Examples:
  storcert keygen -s storcert.key              a signing key pair (storcert.key, storcert.key.pub)
  storcert bundle create results/run-X -o run.tar.zst --key storcert.key
  storcert bundle verify run.tar.zst -p storcert.key.pub";

pub const UPLOAD: &str = "\
Examples:
  storcert upload run.tar.zst --to https://collector.example/upload --spool /var/spool/storcert";
