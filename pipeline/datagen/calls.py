"""Seeded, deterministic "calls" demo data: synthetic call-center calls, an agent and a
customer taking turns, each turn labelled with its speaker role as a time span, mixed with
synthetic industrial noise, clean reference kept.

    python -m pipeline.datagen.calls --out data/calls --noise-out data/calls_noise

For work on long recordings (denoising whole calls, who-speaks-when on windows, the way QA teams
annotate agent and customer turns). The agents are three fixed voices, as a call center's staff
is; each call's customer is another voice, its `group`; customers speak sentences of three
intents (billing, delivery, fault). Writes, all 16 kHz mono PCM16, `<out>/clean/<call_id>.wav`
(the turns, digital silence between), `<out>/noisy/<call_id>.wav` (mixed with one noise kind at a stated SNR),
`<out>/metadata.csv` (`file_name,label,group,clean_file_name,noise_kind,snr_db`: a row per call,
label empty, group = the customer's voice), `<out>/segments.csv` (`file_name,start_s,end_s,label`:
a row per turn, labelled `agent` or `customer`; pauses are unlabelled) and, as the keyword demo does, noise for
`data.noise_base` in `<noise-out>/<kind>/<kind>_<i>.wav`. Voices, speech and noise synthesis
are demo_data's. The same arguments always write byte-identical files.
"""
from __future__ import annotations

import argparse
import csv
import math
import os
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Dict, List, Optional, Tuple

import numpy as np
import soundfile

from components import features
from components.audio import mixing
from components.serving import calls as call_figures
from pipeline.datagen.keywords import BABBLE_TEXT, NOISE_KINDS, SR, make_noise, speak, speakers

LABELS = ("agent", "customer")  # the span labels
INTENTS = ("billing", "delivery", "fault")  # what customers talk about
_AGENT_LINES = (
    "thank you for calling, my name is Sam, how can I help you today",
    "let me pull up your account, can I have your order number please",
    "I understand, I am sorry for the trouble this has caused you",
    "one moment please while I check that in our system",
    "I have raised a ticket and a colleague will call you back today",
    "is there anything else I can help you with on this call",
    "thank you for your patience, I can see the problem now",
    "I will send you a confirmation email within the hour")
_AGENTS = 3  # the first voices drawn are the agents
_TEMPLATES = {  # call-center sentences, 8 per intent, each intent with a vocabulary of its own
    "billing": (
        "I was charged twice for my last invoice of {amount} dollars",
        "can you explain why my bill went up this month", "my credit card was declined when I tried to pay",
        "I would like a refund for the payment I made on {day}", "please update the billing address on my account",
        "when will the refund appear on my bank balance", "I want to set up a monthly direct debit payment",
        "there is an extra fee of {amount} dollars on my statement"),
    "delivery": (
        "my parcel was supposed to arrive on {day} but never came", "where is my order, the parcel is late again",
        "the tracking number {number} has not updated for three days",
        "can the courier leave the package with my neighbour", "the driver delivered the box to the wrong street",
        "I need to move the delivery time slot to {day}", "the shipment arrived in a crushed and open carton",
        "please send the package to the side gate instead"),
    "fault": (
        "the {machine} on line {line} keeps stopping with an error", "the {machine} is leaking oil all over the floor",
        "there is a loud grinding noise coming from the {machine}", "the control panel shows fault code {code} again",
        "the alarm light is flashing red and the {machine} shut down",
        "the motor overheats after ten minutes of running", "we need a technician to repair the broken sensor",
        "the {machine} will not restart after the power cut"),
}
_SLOTS = {"amount": ("12", "35", "49", "80", "120", "250"), "number": ("4417", "2093", "8651", "3328", "7740"),
          "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"),
          "machine": ("pump", "compressor", "conveyor", "boiler", "press", "mixer"),
          "line": ("one", "two", "three", "four", "five"), "code": ("E 12", "F 7", "A 31", "C 4")}
_PAUSE_S = (0.3, 1.5)  # digital silence between sentences
_EDGE_S = (0.2, 1.0)  # leading and trailing silence
_SENTENCE_S = 4.0  # a generous sentence plus pause: sets how many sentences to speak per round
_MISSES = 3  # a call is full when this many sentences did not fit in it
_MAX_VOICES = 60  # a customer voice per call up to this many calls: enough held-out calls to score
_FFT_SLACK = 1100  # samples _fft_friendly may add; it needs at most 1044 for calls up to 2 min
# Stereo calls (`--stereo`): the agent on track 0, the customer on track 1, as call recorders write them.
OVERTALK_SHARE = 0.25  # turns that start before the other side has finished
_OVERTALK_S = (0.3, 1.2)  # by how much
_CROSSTALK_DB = (-35.0, -25.0)  # the other side's leak into a track (headset echo), relative to that side
_CROSSTALK_DELAY_S = 0.012
_TRACK_GAIN_DB = (-8.0, 0.0)  # each side's own level
TRUTH_FILE = features.CALLS_TRUTH_FILE  # the stereo generator's ground truth, a row per call
TRUTH_COLUMNS = ("file_name", "duration_s", "agent_talk_s", "customer_talk_s", "overtalk_s", "overtalk_count",
                 "silence_share", "longest_silence_s", "customer_label")


def _sentence(rng: np.random.Generator, role: str, intent: Optional[str] = None) -> str:
    """An agent's line, or a customer's sentence of `intent` (None: a random one)."""
    if role == "agent":
        return _AGENT_LINES[int(rng.integers(len(_AGENT_LINES)))]
    intent = intent or INTENTS[int(rng.integers(len(INTENTS)))]
    slots = {k: v[int(rng.integers(len(v)))] for k, v in _SLOTS.items()}
    return _TEMPLATES[intent][int(rng.integers(len(_TEMPLATES[intent])))].format(**slots)


def _samples(rng: np.random.Generator, low: float, high: float) -> int:
    return int(round(rng.uniform(low, high) * SR))


def _fft_friendly(length: int) -> int:
    """The least length >= `length` samples (within _FFT_SLACK) whose noise,
    make_noise(..., length / SR + 1, ...), has no prime factor above 31: the FFT that
    synthesizes it then runs ~10x faster. Adds ~5 ms on average."""
    for extra in range(_FFT_SLACK):
        n = int(((length + extra) / SR + 1.0) * SR)  # make_noise's sample count
        for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31):
            while n % p == 0:
                n //= p
        if n == 1:
            return length + extra
    return length


def _assemble(calls: List[SimpleNamespace], pool: ThreadPoolExecutor) -> None:
    """Fills each call with sentences until _MISSES of them would have overrun its target. In
    rounds: each speaks, in parallel, the next few sentences of every open call, so that little
    more is synthesized than used. A (text, voice) pair is spoken once."""
    cache: Dict[tuple, np.ndarray] = {}
    while any(c.misses < _MISSES for c in calls):
        batch = []
        for c in (c for c in calls if c.misses < _MISSES):
            for _ in range(max(1, int((c.target - c.length) / SR / _SENTENCE_S))):
                role = LABELS[c.planned % 2]  # the agent answers, then turns alternate
                c.planned += 1
                batch.append((c, role, (_sentence(c.rng, role, c.intent), c.agent if role == "agent" else c.voice)))
        todo = [k for k in dict.fromkeys(key for _, _, key in batch) if k not in cache]
        cache.update(zip(todo, pool.map(lambda k: speak(k[0], *k[1][1:]), todo)))
        for c, role, key in batch:
            if c.misses >= _MISSES:
                continue
            audio, pause = cache[key], _samples(c.rng, *_PAUSE_S) if c.spans else 0
            start = c.length + pause
            if c.stereo and c.spans and c.rng.random() < OVERTALK_SHARE and c.spans[-1][2] != role:
                last_start, last_end, _ = c.spans[-1]  # barges in before the other side ends
                own_end = max((e for _, e, r in c.spans if r == role), default=0)
                start = max(c.length - _samples(c.rng, *_OVERTALK_S), (last_start + last_end) // 2, own_end)
            if c.spans and start + len(audio) + c.trail + _FFT_SLACK > c.target:  # the first always goes in
                c.misses += 1
                continue
            c.pieces += [np.zeros(max(start - c.length, 0), np.float32), audio]
            c.spans.append((start, start + len(audio), role))
            c.length = max(c.length, start + len(audio))


def generate(out: str, noise_out: str, num_calls: int = 40, min_seconds: float = 10.0,
             max_seconds: float = 120.0, snr_range: Tuple[float, float] = (0.0, 20.0), seed: int = 0,
             workers: int = 4, stereo: bool = False, calls_per_voice: int = 1) -> dict:
    """Writes the calls data set; the same arguments always write the same files. With `stereo`, see
    `_write_stereo`. With `calls_per_voice` k > 1 (stereo), each customer voice makes k consecutive calls,
    each of another intent, so a voice does not tell the intent and a classifier must learn what is said
    (with one call per voice and one intent per call, the voice alone separates the training calls'
    intents; the voice is the split's group, so a voice's calls stay in one split)."""
    if not 0 < min_seconds <= max_seconds:
        raise ValueError(f"need 0 < min_seconds <= max_seconds, got {min_seconds}, {max_seconds}")
    if calls_per_voice < 1:
        raise ValueError(f"need calls_per_voice >= 1, got {calls_per_voice}")
    voices = speakers(min(math.ceil(num_calls / calls_per_voice), _MAX_VOICES) + _AGENTS, seed)
    agents, spk = voices[:_AGENTS], voices[_AGENTS:]
    calls = []
    for i in range(num_calls):
        rng = mixing.rng_for(seed, f"plan/call_{i:04d}")
        target, lead = int(rng.uniform(min_seconds, max_seconds) * SR), _samples(rng, *_EDGE_S)
        intent = None
        if stereo:
            intent = INTENTS[int(rng.integers(len(INTENTS)))]
            if calls_per_voice > 1:  # the voice's k calls rotate through the intents, from a voice's own start
                intent = INTENTS[(i + i // calls_per_voice) % len(INTENTS)]
        calls.append(SimpleNamespace(  # _fft_friendly may lengthen the trailing silence by _FFT_SLACK
            id=f"call_{i:04d}", rng=rng, voice=spk[(i // calls_per_voice) % len(spk)], agent=agents[i % _AGENTS],
            target=target, length=lead,
            trail=_samples(rng, _EDGE_S[0], _EDGE_S[1] - _FFT_SLACK / SR), pieces=[np.zeros(lead, np.float32)],
            spans=[], planned=0, misses=0, stereo=stereo,
            intent=intent))
    with ThreadPoolExecutor(workers) as pool:  # espeak-ng runs as a subprocess
        talkers = list(pool.map(lambda i: speak(BABBLE_TEXT[i], spk[i % len(spk)][1], 160, 50),
                                range(len(BABBLE_TEXT))))
        _assemble(calls, pool)
    for k, kind in enumerate(NOISE_KINDS):
        os.makedirs(os.path.join(noise_out, kind), exist_ok=True)
        for i in range(3):
            noise = make_noise(kind, seed * 1000 + k * 10 + i, 10.0, talkers)
            soundfile.write(os.path.join(noise_out, kind, f"{kind}_{i}.wav"), noise, SR, subtype="PCM_16")
    os.makedirs(os.path.join(out, "clean"), exist_ok=True)
    os.makedirs(os.path.join(out, "noisy"), exist_ok=True)
    if stereo:
        return _write_stereo(out, calls, talkers, min_seconds, max_seconds, snr_range, seed)
    rows, segments, total = [], [], 0
    for c in calls:
        length = max(c.length + c.trail, math.ceil(min_seconds * SR))  # pads short calls
        if length > max_seconds * SR:
            raise ValueError(f"{c.id}: one sentence does not fit in max_seconds={max_seconds}")
        length = _fft_friendly(length)
        clean = np.concatenate(c.pieces + [np.zeros(length - c.length, np.float32)])
        clean_name, noisy_name = f"clean/{c.id}.wav", f"noisy/{c.id}.wav"
        soundfile.write(os.path.join(out, clean_name), clean, SR, subtype="PCM_16")
        # The noisy copy must be mixed against the clean signal as stored (PCM16).
        clean_q = soundfile.read(os.path.join(out, clean_name), dtype="float32")[0]
        rng = mixing.rng_for(seed, f"mix/{c.id}")
        kind = NOISE_KINDS[int(rng.integers(len(NOISE_KINDS)))]
        noise = make_noise(kind, int(rng.integers(2 ** 31)), len(clean_q) / SR + 1.0, talkers)
        snr = float(np.round(rng.uniform(*snr_range), 2))
        noisy, reference = mixing.mix_at_snr(clean_q, noise, snr, rng)
        if not np.array_equal(reference, clean_q):  # the stored clean file must stay the reference
            raise ValueError(f"{noisy_name} clips at {snr:.2f} dB SNR; lower SPEECH_RMS")
        soundfile.write(os.path.join(out, noisy_name), noisy, SR, subtype="PCM_16")
        rows.append([noisy_name, "", c.voice[0], clean_name, kind, f"{snr:.2f}"])
        segments += [[noisy_name, f"{s / SR:.3f}", f"{e / SR:.3f}", label] for s, e, label in c.spans]
        total += length
    return _finish(out, calls, total, rows, segments, list(features.SEGMENT_COLUMNS))


def _write_stereo(out: str, calls: List[SimpleNamespace], talkers, min_seconds: float, max_seconds: float,
                  snr_range: Tuple[float, float], seed: int) -> dict:
    """Two-track calls, as call recorders write them: the agent on track 0, the customer on track 1,
    each side at its own level, with its own noise kind and SNR and a little crosstalk of the other
    side (a delayed leak, 25-35 dB down); OVERTALK_SHARE of the turns start before the other side has
    finished. Each call's customer keeps to one intent. Writes stereo `noisy/` and `clean/` (each track's
    own speech: the reference), metadata.csv (noise_kind: the customer side's), segments.csv with a
    `track` column (agent turns labelled `agent`, customer turns the call's intent) and TRUTH_FILE: each
    call's talk time per side, overtalk, silence share and longest silence from the turns (what `predict`'s
    calls.csv estimates), and the customer's intent."""
    rows, segments, truth, total = [], [], [], 0
    for c in calls:
        length = _fft_friendly(max(c.length + c.trail, math.ceil(min_seconds * SR)))
        if length > max_seconds * SR:
            raise ValueError(f"{c.id}: one sentence does not fit in max_seconds={max_seconds}")
        rng = mixing.rng_for(seed, f"mix/{c.id}")
        clean = np.zeros((length, 2), np.float32)
        for k, (start, end, role) in enumerate(c.spans):
            clean[start:end, LABELS.index(role)] += c.pieces[2 + 2 * k]
        clean *= 10 ** (rng.uniform(*_TRACK_GAIN_DB, size=2) / 20).astype(np.float32)
        clean_name, noisy_name = f"clean/{c.id}.wav", f"noisy/{c.id}.wav"
        soundfile.write(os.path.join(out, clean_name), clean, SR, subtype="PCM_16")
        clean_q = soundfile.read(os.path.join(out, clean_name), dtype="float32")[0]  # mixed as stored
        noisy, kinds = np.zeros_like(clean_q), []
        delay = int(_CROSSTALK_DELAY_S * SR)
        for track in range(2):
            kind = NOISE_KINDS[int(rng.integers(len(NOISE_KINDS)))]
            noise = make_noise(kind, int(rng.integers(2 ** 31)), length / SR + 1.0, talkers)
            mixed, reference = mixing.mix_at_snr(clean_q[:, track], noise, float(rng.uniform(*snr_range)), rng)
            leak = 10 ** (rng.uniform(*_CROSSTALK_DB) / 20) * clean_q[:, 1 - track]
            noisy[:, track] = mixed + np.concatenate([np.zeros(delay, np.float32), leak[:-delay]])
            if not np.array_equal(reference, clean_q[:, track]) or np.abs(noisy[:, track]).max() >= 1.0:
                raise ValueError(f"{noisy_name} clips on track {track}; lower SPEECH_RMS")
            kinds.append(kind)
        soundfile.write(os.path.join(out, noisy_name), noisy, SR, subtype="PCM_16")
        rows.append([noisy_name, "", c.voice[0], clean_name, kinds[1], ""])
        segments += [[noisy_name, f"{s / SR:.3f}", f"{e / SR:.3f}", "agent" if role == "agent" else c.intent,
                      str(LABELS.index(role))] for s, e, role in c.spans]
        per_track = [[(s / SR, e / SR) for s, e, r in c.spans if r == role] for role in LABELS]
        figures = call_figures.figures_of(per_track, length / SR)
        row = figures.row(LABELS)
        truth.append([noisy_name, f"{length / SR:.3f}", *(row[k] for k in TRUTH_COLUMNS[2:-1]), c.intent])
        total += length
    return _finish(out, calls, total, rows, segments, list(features.SEGMENT_COLUMNS) + [features.TRACK],
                   {TRUTH_FILE: [list(TRUTH_COLUMNS)] + truth})


def _finish(out: str, calls: List[SimpleNamespace], total: int, rows: list, segments: list, segment_header: list,
            more: Optional[Dict[str, list]] = None) -> dict:
    """Writes metadata.csv, segments.csv (and `more` tables); returns the data set's counts."""
    tables = {"metadata.csv": [list(features.METADATA_COLUMNS[:6])] + rows,
              "segments.csv": [segment_header] + segments, **(more or {})}
    for name, table in tables.items():
        with open(os.path.join(out, name), "w", newline="") as f:
            csv.writer(f).writerows(table)
    return {"calls": len(calls), "seconds": round(total / SR, 1), "sentences": len(segments),
            "voices": len({c.voice[0] for c in calls}), "labels": len({s[3] for s in segments})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="data/calls")
    parser.add_argument("--noise-out", default="data/calls_noise")
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--min-seconds", type=float, default=10.0)
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stereo", action="store_true",
                        help="two-track calls: agent on track 0, customer on track 1 (see _write_stereo)")
    parser.add_argument("--calls-per-voice", type=int, default=1,
                        help="with --stereo: calls each customer voice makes, each of another intent")
    args = parser.parse_args()
    if args.calls_per_voice > 1 and not args.stereo:
        parser.error("--calls-per-voice needs --stereo (only stereo calls have intents)")
    counts = generate(args.out, args.noise_out, args.calls, args.min_seconds, args.max_seconds, seed=args.seed,
                      stereo=args.stereo, calls_per_voice=args.calls_per_voice)
    print(f"calls data: {counts['calls']} calls, {counts['seconds']} s, {counts['sentences']} sentences, "
          f"{counts['labels']} labels, {counts['voices']} customer voices in {args.out}; noise in {args.noise_out}")


if __name__ == "__main__":
    main()
