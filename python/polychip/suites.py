"""The conformance suites and the training workload, from Python.

Both run in the `polychip` command, as in a vendor's CI: a suite supervises
worker processes (a case that crashes or hangs fails alone) and training
writes a run directory; Python starts the command and reads the files it
writes (results.json, metrics.npy), so what Python sees is exactly what the
command reports. The command is found, in order, at $POLYCHIP_COMMAND, inside
the installed package (polychip/bin/polychip, put there by `pip install .`),
next to a build tree's module (build/bin/polychip) and on PATH.
"""

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

__all__ = ["CertifyRun", "TrainingRun", "certify", "command", "train"]


def command() -> str:
    """The path of the `polychip` command the suites run in."""
    given = os.environ.get("POLYCHIP_COMMAND")
    if given:
        if not os.access(given, os.X_OK):
            raise FileNotFoundError("POLYCHIP_COMMAND=%s is not an executable file" % given)
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "bin", "polychip"),
                      os.path.join(here, "..", "..", "bin", "polychip")):
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    found = shutil.which("polychip")
    if found:
        return found
    raise FileNotFoundError(
        "no polychip command: not in the package (polychip/bin), not next to a build tree's "
        "module, not on PATH; install with `pip install .` or set POLYCHIP_COMMAND")


def _adapter_list(adapters: Union[str, Sequence[str]]) -> str:
    if isinstance(adapters, str):
        text = adapters
    elif isinstance(adapters, (list, tuple)) and all(isinstance(a, str) for a in adapters):
        text = ",".join(adapters)
    else:
        raise TypeError("adapters is a name or a list of names (e.g. 'cpu' or ['cpu', "
                        "'sim.faithful']), not %r" % (adapters,))
    if not text:
        raise ValueError("adapters is empty: name at least one (e.g. 'cpu' or ['cpu', 'sim.faithful'])")
    return text


def _run(arguments: List[str], timeout: Optional[float]) -> subprocess.CompletedProcess:
    # A timeout of 0 or less would end the run before it starts, reported as "ran past".
    if timeout is not None and not timeout > 0:
        raise ValueError("timeout is in seconds and must be positive, not %r" % (timeout,))
    try:
        return subprocess.run([command()] + arguments, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        raise TimeoutError("polychip %s ran past %s s" % (" ".join(arguments), timeout)) from e


@dataclass
class CertifyRun:
    """One `polychip certify` run: its exit code (0 every adapter passes, 1
    one fails), results.json as a dict (docs/results-schema.md), and where
    the results files are."""
    exit_code: int
    results: Dict
    output_dir: str
    summary: str = field(repr=False)  # the command's printed summary table

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    @property
    def verdict(self) -> str:
        """Pass, Fail, ... as results.json says (docs/results-schema.md)."""
        return self.results["verdict"]

    @property
    def caveats(self) -> List[str]:
        """What the verdict stands on that is not polychip's own (tolerances
        loosened past the built-in ones, a bring-up profile, failures turned
        into Waived by a vendor's waivers or a wholesale waiver of a required
        pair, a training reference recorded on a device that is not
        NVIDIA's), a sentence each."""
        return list(self.results.get("caveats", []))

    @property
    def certified(self) -> bool:
        """Passed with no caveat, a polychip certification: results.json's
        own "certified" (docs/results-schema.md), not recomputed here."""
        return bool(self.results["certified"])

    def adapter(self, name: str) -> Dict:
        """One entry of results["adapters"], by its name, device type or device ("sim:9")."""
        entries = self.results.get("adapters", [])
        for entry in entries:
            if name in (entry.get("name"), entry.get("device_type"), entry.get("device")):
                return entry
        raise KeyError("no adapter %r in this run (it has %s)" % (
            name, [e.get("name") for e in entries]))

    def failed_cases(self) -> List[Dict]:
        """The cases that fail an adapter: verdict Fail, Crash or Timeout."""
        return [c for c in self.results.get("cases", [])
                if c.get("verdict") in ("Fail", "Crash", "Timeout")]


def certify(adapters: Union[str, Sequence[str]], suite: str = "precision", level: str = "quick",
            output_dir: Optional[str] = None, *, case: Optional[str] = None,
            ops: Optional[Sequence[str]] = None, profile: Optional[str] = None, tier: Optional[str] = None,
            reference: Optional[str] = None, case_timeout: Optional[float] = None,
            extra_args: Sequence[str] = (), timeout: Optional[float] = None) -> CertifyRun:
    """Runs `polychip certify --suite SUITE --level LEVEL --adapters ...` and
    reads its results.json. output_dir defaults to a new temporary folder.
    case (one case id) or ops (op names) run part of the level: a partial run,
    never certified.
    A usage error (exit code 2: an unknown adapter, suite or level) raises
    ValueError with the command's message; a run whose chips fail returns
    normally with passed False."""
    if output_dir is None:
        output_dir = tempfile.mkdtemp(prefix="polychip-certify-")
    arguments = ["certify", "--suite", suite, "--level", level, "--adapters",
                 _adapter_list(adapters), "--out", output_dir, "--no-progress"]
    for flag, value in (("--case", case), ("--profile", profile), ("--tier", tier),
                        ("--reference", reference), ("--timeout", case_timeout)):
        if value is not None:
            arguments += [flag, str(value)]
    if ops is not None:
        arguments += ["--ops", ",".join(ops)]
    arguments += list(extra_args)
    done = _run(arguments, timeout)
    results_path = os.path.join(output_dir, "results.json")
    if done.returncode not in (0, 1) or not os.path.exists(results_path):
        raise ValueError("polychip %s failed (exit code %d): %s" % (
            " ".join(arguments), done.returncode, (done.stderr or done.stdout).strip()))
    with open(results_path, encoding="utf-8") as f:
        results = json.load(f)
    return CertifyRun(done.returncode, results, output_dir, done.stdout)


@dataclass
class TrainingRun:
    """One `polychip train` run: the run directory (model.safetensors,
    config.json, training_state.json, metrics.npy: docs/training.md) and its
    curves."""
    output_dir: str
    metrics: object  # numpy float64 [steps, 4]: step, loss, gradient norm, learning rate

    @property
    def losses(self):
        return self.metrics[:, 1]

    @property
    def grad_norms(self):
        return self.metrics[:, 2]


def train(output_dir: str, adapter: Union[str, Sequence[str]] = "cpu", steps: int = 100,
          preset: str = "default", *, precision: str = "fp32", seed: Optional[int] = None,
          lr: Optional[float] = None, resume: bool = False, np: Optional[int] = None,
          record_reference: Optional[str] = None, extra_args: Sequence[str] = (),
          timeout: Optional[float] = None) -> TrainingRun:
    """Trains the standard GPT-2 workload with `polychip train` into
    output_dir and returns its curves. adapter is a device (or, with np
    ranks, a list: rank r uses entry r % len). A run that fails raises
    RuntimeError with the command's message (ValueError for a usage error)."""
    import numpy

    arguments = ["train", "--adapter", _adapter_list(adapter), "--steps", str(steps),
                 "--preset", preset, "--precision", precision, "--out", output_dir]
    for flag, value in (("--seed", seed), ("--lr", lr), ("--np", np),
                        ("--record-reference", record_reference)):
        if value is not None:
            arguments += [flag, str(value)]
    if resume:
        arguments.append("--resume")
    arguments += list(extra_args)
    done = _run(arguments, timeout)
    if done.returncode != 0:
        kind = ValueError if done.returncode == 2 else RuntimeError
        raise kind("polychip %s failed (exit code %d): %s" % (
            " ".join(arguments), done.returncode, (done.stderr or done.stdout).strip()))
    return TrainingRun(output_dir, numpy.load(os.path.join(output_dir, "metrics.npy")))
