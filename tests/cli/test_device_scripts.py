"""scripts/device/ says what each script is for, and a cited device script either exists or is said to be
gone: a newcomer reading a figure's source must find the script or be told where its history is."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEVICE = ROOT / "scripts" / "device"


def test_every_device_script_is_listed_in_the_folder_readme() -> None:
    readme = (DEVICE / "README.md").read_text()
    scripts = sorted(p.name for p in DEVICE.iterdir() if p.suffix in (".sh", ".py"))
    assert scripts, "scripts/device/ holds the device runs"
    assert not [s for s in scripts if f"`{s}`" not in readme], "list each script in scripts/device/README.md"
    listed = set(re.findall(r"`([\w.]+\.(?:sh|py))`", readme)) - {"timing_round_redistribution.py"}
    listed -= {"timing_l2_staging.py", "drain_switch_tail.py"}  # benchmarks/, named as the probes' new home
    assert not [s for s in listed if not (DEVICE / s).exists()], "the README lists a script that is not there"


def test_a_cited_device_script_exists_or_the_citation_says_where_it_went() -> None:
    sources = [ROOT / "README.md", *ROOT.glob("docs/**/*.md"), *ROOT.glob("src/**/*.py")]
    sources += [*ROOT.glob("tests/**/*.py"), *ROOT.glob("tests/adversarial/README.md")]
    sources += [*ROOT.glob("benchmarks/*.py"), *ROOT.glob("scripts/**/*.sh"), *ROOT.glob("scripts/**/*.py")]
    dangling = []
    for source in sources:
        text = source.read_text()
        for match in re.finditer(r"scripts/device/([\w.]+\.(?:sh|py))", text):
            near = text[max(0, match.start() - 120) : match.end() + 120]
            if not (DEVICE / match.group(1)).exists() and "git" not in near and "renamed" not in near:
                dangling.append(f"{source.relative_to(ROOT)}: {match.group(0)}")
    assert not dangling, f"cite the script's new home or its history (`git log --all -- PATH`): {dangling}"
