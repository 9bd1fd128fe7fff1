"""Real recorded speech and noise from pinned Debian packages: a denoiser's training set and a real-audio test.

    python -m pipeline.datagen.real --out data/real [--cache data/real-cache]

Every package in SOURCES is fetched once from the Debian pool over HTTP (not apt-get: the
version is pinned, whatever the host's Debian release), checked against its pinned sha256, kept
in `--cache` (a rerun re-verifies and reuses it), unpacked with `dpkg-deb -x`, and its chosen
members are written as 16 kHz mono PCM16 WAV (channels averaged, leading and trailing digital
silence trimmed, the DC offset removed, soxr resampling; GSM 6.10 through the sox CLI):

- `<out>/speech_train/<source>/<name>.wav`, `<out>/speech_test/<source>/<name>.wav`: a `<source>`
  is one speaker or, for the KDE and Tux Paint sets, one language (roughly one speaker);
- `<out>/noise_train/<kind>/<source>__<name>.wav`, `<out>/noise_test/<kind>/<source>__<name>.wav`
  with `<kind>` one of NOISE_KINDS;
- `<out>/manifest.csv` (MANIFEST_COLUMNS: every file, its package, version, licence and member)
  and `<out>/README.txt` (the licences and the credits they require).

Train and test share no package, no source id and no credited speaker (`check_split`). Files
shorter than SPEECH_MIN_SECONDS (speech) or NOISE_MIN_SECONDS (noise) after trimming, silent
ones, speech with over SPEECH_MAX_CLIPPED of its samples at full scale, and copies (the same
samples as a file already written) are dropped, each with a logged reason.
docs/data-sources.md lists what each package gives; the survey behind the choice is
docs/real-audio-candidates.md.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import io
import logging
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import soundfile
import soxr

from components.checksums import sha256_file

logger = logging.getLogger(__name__)

SR = 16000
POOL = "http://deb.debian.org/debian/pool/main/"
SPEECH_MIN_SECONDS = 0.3
NOISE_MIN_SECONDS = 1.0
SILENCE = 2 / 32768  # |sample| at or below this (two 16-bit steps: dither) is digital silence
CLIPPED = 0.99  # |sample| at or above this is at full scale
# Speech (the denoiser's clean target) with more of its samples at full scale is dropped: whole sets
# (tuxpaint es, most of klettres ml and tn) were recorded clipped.
SPEECH_MAX_CLIPPED = 0.01
NOISE_KINDS = ("machinery", "traffic", "crowd", "music", "outdoor")
ROLES = ("speech", "noise")
SPLITS = ("train", "test")
MANIFEST_COLUMNS = ("path", "role", "split", "kind", "source", "package", "version", "licence", "member",
                    "seconds", "source_sample_rate")
_CHUNK = 1 << 20


class Member(NamedTuple):
    """One candidate recording of an unpacked package."""
    name: str  # its path inside the package; a container's entry is `<container path>#<index>`
    file: str  # where it is on disk (for a container entry: the container)
    data: Optional[bytes] = None  # a container entry's bytes
    note: str = ""  # the container's description of the entry


class Pick(NamedTuple):
    """Where a chosen member goes: its source id, file name (no extension), noise kind, licence."""
    source: str
    name: str
    kind: str = ""
    licence: str = ""  # empty: the package's


@dataclass(frozen=True)
class Source:
    package: str
    version: str  # Debian version, with its epoch
    pool_path: str  # below the pool's `main/`
    sha256: str
    size: int  # bytes of the .deb
    licence: str
    role: str  # speech or noise
    split: str  # train or test
    ids: Tuple[str, ...]  # every source id `pick` may return
    pick: Callable[[Member], Optional[Pick]]  # None: not taken
    speakers: Tuple[str, ...] = ()  # the credited voices (speech), for the split check
    credit: str = ""  # the attribution README.txt repeats
    members: Optional[Callable[[str], Iterator[Member]]] = None  # None: every regular file

    @property
    def file_name(self) -> str:
        return os.path.basename(self.pool_path)


def _slug(text: str) -> str:
    """A file-name-safe ASCII form: runs of other characters become one underscore."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", text).strip("_.") or "x"


def _files(root: str) -> Iterator[Member]:
    """Every regular file of the unpacked package (not symlinks: they point at other members), in order."""
    for directory, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                yield Member(os.path.relpath(path, root).replace(os.sep, "/"), path)


# --- speech ----------------------------------------------------------------------------------

# Asterisk prompts that are tones or animal noise, not speech (beeps, the conference join and
# leave tones, the "monkeys" demo).
ASTERISK_NOT_SPEECH = frozenset({"beep", "beeperr", "ascending-2tone", "descending-2tone", "confbridge-join",
                                 "confbridge-leave", "tt-monkeys"})


def _asterisk(voice: str, source_id: str) -> Callable[[Member], Optional[Pick]]:
    """Prompts of one Asterisk voice directory, without `silence/` (digital near-silence) and tones."""
    prefix = f"usr/share/asterisk/sounds/{voice}/"

    def pick(member: Member) -> Optional[Pick]:
        if not member.name.startswith(prefix) or not member.name.endswith((".wav", ".gsm")):
            return None
        rest = member.name[len(prefix):].rsplit(".", 1)[0]
        if rest.split("/")[0] == "silence" or rest in ASTERISK_NOT_SPEECH:
            return None
        return Pick(source_id, _slug(rest.replace("/", "-")))
    return pick


def _by_language(pattern: str, prefix: str, skip: Sequence[str] = ()) -> Callable[[Member], Optional[Pick]]:
    """Members matching `pattern` (groups `lang` and `name`), one source `<prefix>_<lang>` per language
    but the languages in `skip`."""
    regex = re.compile(pattern)

    def pick(member: Member) -> Optional[Pick]:
        match = regex.fullmatch(member.name)
        if not match or match["lang"] in skip:
            return None
        return Pick(f"{prefix}_{match['lang'].lower()}", _slug(match["name"].replace("/", "-")))
    return pick


# codec2's wav/: all.wav concatenates the others; f2400 and m2400 are forig and morig coded at
# 2400 bit/s (they correlate 0.4 with them), the same two speakers through a vocoder.
CODEC2_NOT_TAKEN = ("all", "f2400", "m2400")

def _codec2_pick(member: Member) -> Optional[Pick]:
    match = re.fullmatch(r"usr/share/codec2/wav/(?P<name>[^/]+)\.wav", member.name)
    if not match or match["name"] in CODEC2_NOT_TAKEN:
        return None
    return Pick("codec2", _slug(match["name"]))


# Tux Paint's es descriptions are left out: every one was recorded clipped (over SPEECH_MAX_CLIPPED).
TUXPAINT_LANGUAGES = ("be", "bg", "ca", "da", "el", "fr", "lt", "ml", "nl", "ro", "ru")
KLETTRES_LANGUAGES = ("ar", "cs", "da", "de", "en", "en_gb", "es", "fr", "he", "hu", "it", "lt", "ml", "nb", "nds",
                      "nl", "pt_br", "ru", "tn", "uk")
# sr@latin, sr@ijekavian and sr@ijekavianlatin are byte copies of sr (left out by the pattern)
KTUBERLING_LANGUAGES = ("ca", "da", "de", "el", "en", "es", "fi", "fr", "ga", "gl", "it", "lt", "nds", "nl", "nn", "pt",
                        "ro", "ru", "sl", "sr", "sv", "uk", "wa")


# --- noise -----------------------------------------------------------------------------------

def _named(pattern: str, source_id: str, kinds: Dict[str, str],
           licences: Optional[Dict[str, str]] = None) -> Callable[[Member], Optional[Pick]]:
    """Members matching `pattern` whose group `key` is in `kinds` (key -> noise kind); group `name`
    (default: the whole file name) names the output."""
    regex = re.compile(pattern)

    def pick(member: Member) -> Optional[Pick]:
        match = regex.fullmatch(member.name)
        if not match or match["key"] not in kinds:
            return None
        name = match.groupdict().get("name") or os.path.basename(member.name).rsplit(".", 1)[0]
        return Pick(source_id, _slug(name), kinds[match["key"]], (licences or {}).get(match["key"], ""))
    return pick


def _kinds(**groups: Sequence[str]) -> Dict[str, str]:
    return {key: kind for kind, keys in groups.items() for key in keys}


# lincity-ng's city sounds, by name without the trailing number. Left out: the UI (Click,
# WindowOpen/Close), construction and demolition effects (Build, Raze), the rocket pad, the fire
# station, the solar plant and power line, the monument and the commune (content not described).
LINCITY_KINDS = _kinds(
    machinery=("Blacksmith", "CoalMine", "OreMine", "IndustryHigh", "IndustryLight", "Mill", "Pottery", "Recycle",
               "PowerCoalEmpty", "PowerCoalFull", "PowerCoalLow", "PowerCoalMed", "WindMill", "WindMillHTech",
               "MonumentConstruction", "Tip", "Substation"),
    traffic=("TraficHigh", "TraficLow", "DirtTrack", "RailTrain", "Harbor"),
    crowd=("MarketEmpty", "MarketFull", "MarketLow", "MarketMed", "School", "University", "SportsCroud",
           "ResidentialHigh", "ResidentialMed", "ResidentialLow", "ResidentialLowLow", "Health", "Shanty"),
    outdoor=("Water", "Fire", "FireWasteland", "Green", "ParklandLake", "ParklandPlane", "Farm", "OrganicFarm"))
_lincity_sounds = _named(r"usr/share/games/lincity-ng/sounds/(?P<key>[A-Za-z]+?)\d*\.wav", "lincity", LINCITY_KINDS)
_lincity_music = _named(r"usr/share/games/lincity-ng/music/default/(?P<name>[^/]+)\.(?P<key>ogg)", "lincity",
                        {"ogg": "music"})


def _lincity_pick(member: Member) -> Optional[Pick]:
    """The city sounds of LINCITY_KINDS and the three music tracks."""
    return _lincity_sounds(member) or _lincity_music(member)

# minetest_game's recordings of at least 1 s (per-mod READMEs give the licences): water, lava and
# fire ambience, the furnace's fire, wading. Its dig, tool, door and footstep sounds are all under 1 s.
MINETEST_KINDS = _kinds(outdoor=("env_sounds_lava", "env_sounds_water", "fire_fire", "fire_large", "fire_small",
                                 "default_furnace_active", "default_water_footstep"))
MINETEST_LICENCES = {"env_sounds_lava": "CC0-1.0", "env_sounds_water": "CC0-1.0", "default_furnace_active": "CC0-1.0",
                     "fire_fire": "CC-BY-3.0", "fire_large": "CC-BY-3.0", "fire_small": "CC-BY-3.0",
                     "default_water_footstep": "CC-BY-3.0"}

# OpenSFX entries by index (readme.txt names each one's freesound/pdsounds original). Left out: the
# year jingles (0, 1), splats (2, 31, 32), crashes and explosions (15-19), the cash till, beep and
# morse (20-22), plane wheels (23), the empty entries (34, 50), the car horn (35, under 1 s),
# the Toyland cartoon mixes (41-49, 51, 53, 58, 60, 62-64, 69, 70) and falling trees (54, 55).
OPENSFX = {3: ("machinery", "factory_whistle"), 4: ("traffic", "steam_train_departure"),
           5: ("traffic", "steam_train_tunnel"), 6: ("traffic", "ship_horn"), 7: ("traffic", "ferry_horn"),
           8: ("traffic", "propeller_plane_start"), 9: ("traffic", "early_jet_takeoff"),
           10: ("traffic", "diesel_train_departure"), 11: ("machinery", "mining_machinery_elevator"),
           12: ("machinery", "electric_sparking"), 13: ("traffic", "steam_engine"), 14: ("traffic", "level_crossing"),
           24: ("traffic", "helicopter"), 25: ("traffic", "truck_start"), 26: ("traffic", "truck_start_horn"),
           27: ("traffic", "modern_bus_start"), 28: ("traffic", "old_bus_start"), 29: ("crowd", "applause"),
           30: ("crowd", "oooh"), 33: ("machinery", "jackhammer"), 36: ("outdoor", "sheep"), 37: ("outdoor", "cow"),
           38: ("outdoor", "horse"), 39: ("machinery", "smithy"), 40: ("machinery", "circular_saw"),
           52: ("outdoor", "wind"), 56: ("machinery", "chainsaw"), 57: ("outdoor", "heavy_wind"),
           59: ("traffic", "supersonic_jet_takeoff"), 61: ("traffic", "modern_jet_takeoff"),
           65: ("traffic", "maglev_departure"), 66: ("outdoor", "tropical_bird_1"), 67: ("outdoor", "lion_roar"),
           68: ("outdoor", "monkeys"), 71: ("traffic", "monorail_departure"), 72: ("outdoor", "tropical_bird_2")}
OPENSFX_CAT = "usr/share/games/openttd/baseset/opensfx/opensfx.cat"
_CC_LICENCES = {"Creative Commons Attribution 3.0 Unported": "CC-BY-3.0",
                "Creative Commons Attribution-ShareAlike 3.0 Unported": "CC-BY-SA-3.0",
                "Creative Commons Zero 1.0": "CC0-1.0"}


def opensfx_entries(data: bytes, label: str = "opensfx.cat") -> Iterator[Tuple[int, str, bytes]]:
    """(index, description, RIFF WAV bytes) of an OpenTTD .cat sound container: a table of
    little-endian uint32 (offset | 0x80000000, size) pairs, the first offset giving the table's
    length; at each offset a length byte, the NUL-terminated description, then `size` bytes of WAV."""
    if len(data) < 8:
        raise ValueError(f"{label}: {len(data)} bytes, too short for a sound container")
    count = (struct.unpack_from("<I", data, 0)[0] & 0x7FFFFFFF) // 8
    if not 0 < count * 8 <= len(data):
        raise ValueError(f"{label}: entry table of {count} entries does not fit in {len(data)} bytes")
    for index in range(count):
        offset, size = struct.unpack_from("<II", data, 8 * index)
        offset &= 0x7FFFFFFF
        length = data[offset]
        start = offset + 1 + length
        if start + size > len(data):
            raise ValueError(f"{label}: entry {index} (offset {offset}, {size} bytes) runs past the end")
        note = data[offset + 1:start].rstrip(b"\0").decode("utf-8", "replace")
        yield index, note, data[start:start + size]


def _opensfx_members(root: str) -> Iterator[Member]:
    path = os.path.join(root, OPENSFX_CAT)
    with open(path, "rb") as f:
        data = f.read()
    for index, note, wav in opensfx_entries(data, path):
        yield Member(f"{OPENSFX_CAT}#{index:02d}", path, wav, note)


def _opensfx_pick(member: Member) -> Optional[Pick]:
    if not member.name.startswith(OPENSFX_CAT + "#"):
        return None
    index = int(member.name.rsplit("#", 1)[1])
    if index not in OPENSFX:
        return None
    kind, name = OPENSFX[index]
    stated = re.search(r"License: (.+?)\.(?:\s|$)", member.note)
    return Pick("opensfx", f"{index:02d}_{name}", kind, _CC_LICENCES.get(stated[1], "") if stated else "")


# 0 A.D.'s ambience beds (its sounds sit in one zip inside the package: `_zip_members` reads them from it).
# Left out: every other folder of audio/ (unit voices, attacks, music, the interface).
ZAD_ZIP = "usr/share/games/0ad/mods/public/public.zip"
ZAD_KINDS = _kinds(outdoor=("dayscape", "water", "weather", "amb_farm"), traffic=("amb_port",), crowd=("amb_trade",))
_ZAD_PATTERN = re.compile(r"audio/ambient/(?:building/(?P<building>amb_[a-z]+)_\d+|(?P<folder>dayscape|water|weather)"
                          r"/[^/]+)\.ogg")


def _zip_members(container: str, prefix: str) -> Callable[[str], Iterator[Member]]:
    """The entries under `prefix` of the zip `container` inside the unpacked package, each read when reached."""
    import zipfile  # here only: one package needs it

    def members(root: str) -> Iterator[Member]:
        path = os.path.join(root, container)
        with zipfile.ZipFile(path) as archive:
            for name in sorted(archive.namelist()):
                if name.startswith(prefix) and not name.endswith("/"):
                    yield Member(f"{container}#{name}", path, archive.read(name))
    return members


def _zad_pick(member: Member) -> Optional[Pick]:
    container, _, entry = member.name.partition("#")
    match = _ZAD_PATTERN.fullmatch(entry) if container == ZAD_ZIP else None
    if not match:
        return None
    kind = ZAD_KINDS[match["building"] or match["folder"]]
    return Pick("0ad", _slug(entry[len("audio/ambient/"):].rsplit(".", 1)[0].replace("/", "_")), kind)


# Scorched 3D's ambience and vehicle recordings of at least 3 s; `apoc/` is CC-BY-SA-3.0, `none/` GPL-2+.
# Left out: explosions, weapons, UI beeps, animal calls and screams.
SCORCHED_KINDS = _kinds(
    crowd=("cheeringloop",), machinery=("factoryloop1", "tankmove"),
    traffic=("citysounds", "cessna", "helicopter", "policecar", "firetruck", "apache_1", "f16_1", "f16_2", "f18_1",
             "f18_2", "jet", "t38"),
    outdoor=("birds1", "birds2", "frogs", "lava2", "oceanwaves", "rain", "thunder2", "thunder3"))
_scorched = _named(r"usr/share/games/scorched3d/data/globalmods/(?P<mod>apoc|none)/data/wav/(?:misc|movement)/"
                   r"(?P<key>[a-z0-9_]+)\.wav", "scorched3d", SCORCHED_KINDS)


def _scorched_pick(member: Member) -> Optional[Pick]:
    pick = _scorched(member)
    if pick is None:
        return None
    return pick._replace(licence="CC-BY-SA-3.0" if "/apoc/" in member.name else "GPL-2+")


# Search and Rescue's helicopter and jet engine recordings (start, run, shut down): turbines and rotors.
SAR_PATTERN = (r"usr/share/games/searchandrescue/sounds/(?P<name>(?:hh6[05]/)?(?P<key>helicopter_engine|engine|"
               r"jet_engine)[a-z0-9_]*)\.wav")


def _sar_pick(member: Member) -> Optional[Pick]:
    match = re.fullmatch(SAR_PATTERN, member.name)
    return Pick("searchandrescue", _slug(match["name"].replace("/", "_")), "machinery") if match else None


# Eat the Whistle's stadium crowd (chants, cheers, boos, the background roar; 22 kHz 8-bit mono): recorded
# crowds for training, where the test side's crowds are Tux Football's and OpenSFX's applause. Against them
# (normalized cross-correlation at 8 kHz, any lag, whole files) every one scores at most 0.11: no shared recording.
ETW_PATTERN = r"usr/share/games/etw/(?:crowd/(?P<n>crowd\d+)|snd/(?P<s>crowd|boou|fondo))\.wav"


def _etw_pick(member: Member) -> Optional[Pick]:
    match = re.fullmatch(ETW_PATTERN, member.name)
    return Pick("etw", match["n"] or match["s"], "crowd") if match else None


# SuperTuxKart's recorded ambiences and engines, by name (the licence per file is Debian's copyright file's):
# a restaurant's babble and an airport hall with its announcements (crowd: the kind where the denoiser trails
# RNNoise on the test part), a stadium's goal cheer, a steam locomotive and a jet's fly-over (traffic), engine,
# compressor, machine and clockwork loops (machinery). Left out: the karts' effects, music, water and birds (outdoor is
# the best-covered kind already), the radio static (a synthetic-sounding hiss).
STK_KINDS = _kinds(crowd=("lenautile_restaurant", "sara_airport_pa", "goal_scored"),
                   traffic=("airplane_jetEngine", "steamLocomotive"),
                   machinery=("engine_large", "engine_small", "machine_sound", "clock"))
STK_LICENCES = {"lenautile_restaurant": "CC0-1.0", "sara_airport_pa": "CC-BY-SA-4.0", "goal_scored": "CC-BY-3.0",
                "airplane_jetEngine": "CC-BY-SA-3.0", "steamLocomotive": "CC-BY-SA-3.0",
                "engine_large": "CC-BY-SA-3.0", "engine_small": "CC-BY-SA-3.0", "machine_sound": "CC-BY-3.0",
                "clock": "public-domain"}
_stk_pick = _named(r"usr/share/games/supertuxkart/data/(?:sfx|tracks/black_forest)/(?P<key>[A-Za-z_]+)\.ogg",
                   "supertuxkart", STK_KINDS, STK_LICENCES)

# Unknown Horizons' workplace and town loops (content/: CC-BY-SA-3.0): a market square and a tavern (crowd),
# a lumberjack's axe and saw, a windmill, a warehouse, a smithy and a stonemason (machinery). Left out: the
# chapel (128 s of unknown content), the sheep field, the UI and event jingles and the voices.
UH_KINDS = _kinds(crowd=("main_square", "tavern"),
                  machinery=("lumberjack_long", "windmill", "warehouse", "smith", "stonemason"))
_uh_pick = _named(r"usr/share/unknown-horizons/content/audio/sounds/(?P<key>[a-z_]+)\.ogg", "unknown_horizons",
                  UH_KINDS)


# --- the packages ----------------------------------------------------------------------------

_ASTERISK_CREDIT = ("Asterisk core sounds 1.6.1 (downloads.asterisk.org), funded by Digium, Inc.; licensed "
                    "CC-BY-SA-3.0 (en, es, fr) and CC-BY-3.0 (it, ru) per Debian's copyright file.")
_POOL_CORE = "a/asterisk-core-sounds/asterisk-core-sounds-{}-wav_1.6.1-1_all.deb"


def _core(language: str, voice: str, source_id: str, sha256: str, size: int, licence: str, speaker: str,
          note: str) -> Source:
    return Source(f"asterisk-core-sounds-{language}-wav", "1.6.1-1", _POOL_CORE.format(language), sha256, size,
                  licence, "speech", "train", (source_id,), _asterisk(voice, source_id), (speaker,),
                  f"{note} {_ASTERISK_CREDIT}")


SOURCES: Tuple[Source, ...] = (
    # --- speech, train
    _core("en", "en_US_f_Allison", "asterisk_en_allison",
          "2be3ea287d83299d143815fa804f11179a75b7affd4a758b98b55f5afc18a35d", 18272864,
          "CC-BY-SA-3.0", "Allison Smith", "US English prompts recorded by Allison Smith (theivrvoice.com)."),
    _core("es", "es_MX_f_Allison", "asterisk_es_allison",
          "9283a09a6d56fccdcc2bcfe86c48f0f844289cfbd46a3184d8785a6f7f569903", 23767256,
          "CC-BY-SA-3.0", "Allison Smith", "Mexican Spanish prompts recorded by Allison Smith (theivrvoice.com)."),
    _core("fr", "fr_CA_f_June", "asterisk_fr_june",
          "8d4e1bc32ed5ba7fbda40841ca1825ed20cc6232724a473c90f8bb0e53e6073e", 18516060,
          "CC-BY-SA-3.0", "June Wallack", "Canadian French prompts recorded by June Wallack (junewallack.com), "
          "translated by Clod Patry, Kristopher Lalletti and June Wallack."),
    _core("it", "it_IT_m_Carlo", "asterisk_it_carlo",
          "5a26638089e134b8ac39363fe249c5c93c50cd8bfdc9b2499ae61ec4a35e2fcb", 18262124,
          "CC-BY-3.0", "Carlo Flora", "Italian prompts recorded by Carlo Flora (carloflora.com), translated by "
          "Silvia Petrin."),
    _core("ru", "ru_RU_f_IvrvoiceRU", "asterisk_ru_ivrvoice",
          "ccbfaebfa450b7a9ddf644ae0f3d1e9017d5df7c0aebe816e946345589d38201", 18788860,
          "CC-BY-3.0", "ivrvoice.ru (provided by Maxim Topal)", "Russian prompts provided by Maxim Topal, "
          "ivrvoice.ru."),
    Source("tuxpaint-stamps-default", "2022.06.04-1", "t/tuxpaint-stamps/tuxpaint-stamps-default_2022.06.04-1_all.deb",
           "6db6c1bfc870a47f1499d6203b083522eacb57c5f9c87d468f2e92eb6d9d5f34", 160880444, "GPL-2", "speech", "train",
           tuple(f"tuxpaint_{lang}" for lang in TUXPAINT_LANGUAGES),
           _by_language(r"usr/share/tuxpaint/stamps/(?P<name>.+)_desc_(?P<lang>[a-z]{2})\.ogg(?:\.ogg)?",
                        "tuxpaint", skip=("es",)),
           ("Kseniya Buraya", "Krasimir Petkov", "Joe Dalton", "Kiriaki Serafeim", "PaulK",
            "Jacques Chion", "Tabbytha", "Edwin Veber", "Pere Pujal i Carabantes", "Andrius Jurkus"),
           "Tux Paint stamps (Bill Kendrick and contributors); spoken descriptions credited in its changelog to "
           "Kseniya Buraya (be), Krasimir Petkov (bg), Pere Pujal i Carabantes (ca), Joe Dalton (da), Kiriaki "
           "Serafeim (el), PaulK and Jacques Chion (fr), Tabbytha (ro), Edwin Veber (ru); "
           "numbers from Schoolsplay, prepared by Caroline Ford."),
    Source("klettres-data", "4:22.12.3-1", "k/klettres/klettres-data_22.12.3-1_all.deb",
           "1186d257a19e84230856baea0b0b1ded8be9195080fcdb2588970b5cd937f5a8", 39529084, "GPL-2+", "speech", "train",
           tuple(f"klettres_{lang}" for lang in KLETTRES_LANGUAGES),
           _by_language(r"usr/share/klettres/(?P<lang>[a-z]{2,3}(?:_[A-Z]{2})?)/(?P<name>(?:alpha|syllab)/[^/]+)\.ogg",
                        "klettres"),
           ("Lindonjohnson Monte", "Michelle Monte", "Eva Mikulcikova", "Erik Kjaer Pedersen", "Geert Stams",
            "Robert Wadley", "Ludovic Grossard", "Helmut Kriege", "Assaf Gorgon", "Pietro Pasotti", "Manfred Wiese",
            "Sonke Dibbern", "Ana Belen Caballero", "Juan Pedro Paredes", "Liudas Alisauskas", "Dashk0",
            "Johnstad/Gabor"),
           "KLettres (Anne-Marie Mahfouf, KDE); sounds credited in its handbook to Lindonjohnson and Michelle Monte "
           "(pt_BR), Eva Mikulcikova (cs), Erik Kjaer Pedersen (da), Geert Stams (nl), Robert Wadley (en), Ludovic "
           "Grossard (fr), Helmut Kriege (de), Assaf Gorgon (he), Pietro Pasotti (it), Manfred Wiese and Sonke "
           "Dibbern (nds), Ana Belen Caballero and Juan Pedro Paredes (es); in the files' tags to Liudas "
           "Alisauskas (lt), Dashk0 (ru), Johnstad/Gabor (nb)."),
    # --- speech, test
    Source("codec2-examples", "1.0.5-1", "c/codec2/codec2-examples_1.0.5-1_all.deb",
           "7af8cd128f269a1d8116993c9d2bd7d4d452fc17da46a09899aaca2b9bd993d4", 11362712, "LGPL-2.1", "speech", "test",
           ("codec2",), _codec2_pick,
           ("hts1a", "hts2a", "forig", "morig", "mmt1", "big_dog", "cross", "david4", "ve9qrp", "vk5qi", "vk2tpm",
            "wia"),
           "Codec 2 speech samples (David Rowe, rowetel.com), LGPL-2.1."),
    Source("asterisk-prompt-it-menardi-wav", "1:1.4.22+mm20110907-3.1",
           "a/asterisk-prompt-it/asterisk-prompt-it-menardi-wav_1.4.22+mm20110907-3.1_all.deb",
           "3094530d98f8758ac275572d59624c41f60969fef883f34f4886d144f3dfeb21", 18776300, "CC-BY-SA-3.0", "speech",
           "test", ("asterisk_it_menardi",), _asterisk("it_IT_f_Menardi", "asterisk_it_menardi"), ("Paola Dal Zot",),
           "Italian Asterisk prompts by Marco Menardi, voice Paola Dal Zot; CC-BY-SA-3.0."),
    Source("ktuberling-data", "4:22.12.3-1", "k/ktuberling/ktuberling-data_22.12.3-1_all.deb",
           "fba44c875bfa31ea488dadd9263e87a4dcaea0bd47d28817f6c0dc6d2af970ed", 46661752, "GPL-2+", "speech", "test",
           tuple(f"ktuberling_{lang}" for lang in KTUBERLING_LANGUAGES),
           _by_language(r"usr/share/ktuberling/sounds/(?P<lang>[a-z]{2,3})/(?P<name>[^/]+)\.(?:ogg|wav|opus)",
                        "ktuberling"),
           ("Otger Mas", "Orestes", "Bernat", "Martha Schou", "clavisound.gr and patty", "Donatas Glodenis",
            "Djan Cayron"),
           "KTuberling (KDE); voices named in the files' tags: Otger Mas, Orestes and Bernat (ca), Martha Schou "
           "(da), clavisound.gr and patty (el), Donatas Glodenis (lt), Djan Cayron (wa)."),
    # --- noise, train
    Source("lincity-ng-data", "2.9~git20150314-5", "l/lincity-ng/lincity-ng-data_2.9~git20150314-5_all.deb",
           "8f5e85bd42879abdc7099b035d7a3d7468eceb6b93b52a12270c28f3f3c792f9", 44782216, "GPL-2+", "noise", "train",
           ("lincity",), _lincity_pick,
           credit="LinCity-NG sounds and music (Paulo Augusto, Robert van Herk, pronobozo), GPL-2+."),
    Source("asterisk-moh-opsound-wav", "2.03-1.1", "a/asterisk-moh-opsound/asterisk-moh-opsound-wav_2.03-1.1_all.deb",
           "8f9d808a729d305c2d3343993f21ca5e6829e411682618dc8ea7aa8bc24a566c", 13969212, "CC-BY-SA-3.0", "noise",
           "train", ("asterisk_moh",),
           _named(r"usr/share/asterisk/moh/(?P<name>[^/]+)\.(?P<key>wav)", "asterisk_moh", {"wav": "music"}),
           credit="Asterisk music on hold: Macroform (Paul Shuler), Manolo Camp, Reno Project; CC-BY-SA-3.0."),
    Source("minetest-data", "5.6.1+dfsg+~1.9.0mt8+dfsg-2",
           "m/minetest/minetest-data_5.6.1+dfsg+~1.9.0mt8+dfsg-2_all.deb",
           "91371dd2bd51cfcd4fa60c138667989a47047dfe1a47f7523b9ad1782d397585", 3646524, "CC-BY-SA-3.0", "noise",
           "train", ("minetest",),
           _named(r"usr/share/games/minetest/games/minetest_game/mods/[^/]+/sounds/(?P<key>[a-z_]+)(?:\.\d+)?\.ogg",
                  "minetest", MINETEST_KINDS, MINETEST_LICENCES),
           credit="Minetest Game sounds: Yuval and Halion (CC0-1.0, env_sounds), Dynamicell and dobroide "
                  "(CC-BY-3.0, fire), iankath (CC0-1.0, furnace), AGFX (CC-BY-3.0, water footsteps), via "
                  "freesound.org."),
    Source("0ad-data", "0.0.26-1", "0/0ad-data/0ad-data_0.0.26-1_all.deb",
           "53745ae74d05bccf6783400fa98f3932b21729ab9d2e86151aa2c331c3455178", 1377557908, "CC-BY-SA-3.0", "noise",
           "train", ("0ad",), _zad_pick,
           members=_zip_members(ZAD_ZIP, "audio/ambient/"),
           credit="0 A.D. (Wildfire Games) ambient sounds, CC-BY-SA-3.0."),
    Source("scorched3d-data", "44+dfsg-8", "s/scorched3d/scorched3d-data_44+dfsg-8_all.deb",
           "b0be0a6d561966a62b1f135e0e6f5681c85f12e34ecad5777cb1af9fbcb7f1da", 31954088, "GPL-2+", "noise", "train",
           ("scorched3d",), _scorched_pick,
           credit="Scorched 3D (Gavin Camp and contributors): globalmods/none GPL-2+; globalmods/apoc CC-BY-SA-3.0, "
                  "authors in /usr/share/doc/scorched3d-data/authors.txt."),
    Source("searchandrescue-data", "1.3.0-1.1", "s/searchandrescue-data/searchandrescue-data_1.3.0-1.1_all.deb",
           "0036c09a92a90a2ce4ac3dde026bb90cc306cd1964f24749c0229926ff36d1d3", 46517968, "GPL", "noise",
           "train", ("searchandrescue",), _sar_pick,
           credit="Search and Rescue data, (C) 1999-2004 WolfPack Entertainment, GPL (no version stated)."),
    Source("etw-data", "3.6+svn162-6", "e/etw/etw-data_3.6+svn162-6_all.deb",
           "d1c79c32f6223332c01eb23ba78531e8d9d663c1f057cd21d8aac708b8de218a", 4955688, "GPL-2+", "noise", "train",
           ("etw",), _etw_pick,
           credit="Eat the Whistle (Gabriele Greco), GPL-2+."),
    Source("supertuxkart-data", "1.4+dfsg-2", "s/supertuxkart/supertuxkart-data_1.4+dfsg-2_all.deb",
           "568d69cda50dc8ad1facb89514bd14953dfca736fdb83c49ae330b0aa7dd2364", 627742860,
           "per file: CC-BY-SA-3.0, CC-BY-SA-4.0, CC-BY-3.0, CC0-1.0, public domain", "noise",
           "train", ("supertuxkart",), _stk_pick,
           credit="SuperTuxKart sounds: Alcappuccino (lenautile_restaurant, CC0-1.0, freesound 263528); "
                  "2887679652, WilliamS and Jean-Manuel Clemencon (sara_airport_pa, CC-BY-SA-4.0); jordiroquer "
                  "(goal_scored, CC-BY-3.0, freesound 148153); Fritz Schlueter (airplane_jetEngine, CC-BY-SA-3.0, "
                  "Wikimedia Commons); Daniel Simion (steamLocomotive, CC-BY-SA-3.0); Mike Koenig, Stephan, "
                  "SpeedJunkie and Marianne Gagnon (engine_large, CC-BY-SA-3.0); Ivan Gabovitch (engine_small, "
                  "CC-BY-SA-3.0); Swelk and Marianne Gagnon (machine_sound, CC-BY-3.0); Natalie (clock, public "
                  "domain, pdsounds.org)."),
    Source("unknown-horizons", "2019.1-6", "u/unknown-horizons/unknown-horizons_2019.1-6_all.deb",
           "ff49ea196d0f57c80d4cd4509c030240cbe632881f8c5b2a1265dd3e3795f100", 248491344, "CC-BY-SA-3.0", "noise",
           "train", ("unknown_horizons",), _uh_pick,
           credit="Unknown Horizons content (Unknown Horizons Team; the lumberjack by hazure), CC-BY-SA-3.0."),
    # --- noise, test
    Source("openttd-opensfx", "1.0.3-2", "o/openttd-opensfx/openttd-opensfx_1.0.3-2_all.deb",
           "2898b4677a3caccc4abc08fb4cf83319047b5a04729291deb5c77a8cd713c006", 9895076, "CC-BY-SA-3.0", "noise", "test",
           ("opensfx",), _opensfx_pick, members=_opensfx_members,
           credit="OpenSFX 1.0.3 (OpenTTD): edited by Janis Lukss, Wuzzy and Richard Wheeler from freesound.org "
                  "and pdsounds.org recordings; each entry's author and licence (CC-BY-3.0, CC-BY-SA-3.0 or CC0-1.0) "
                  "is in its readme.txt and in manifest.csv."),
    Source("tuxfootball", "0.3.1-7", "t/tuxfootball/tuxfootball_0.3.1-7_amd64.deb",
           "bf633b85135bc39d56282cb6be25787fbdeebf22062351508dfdafc5e3c1a083", 15797400, "GPL-2+", "noise", "test",
           ("tuxfootball",),
           _named(r"usr/share/games/tuxfootball/sound/(?P<key>crowdcheer|crowdboo|crowdooh|titlemusic|ingame)\."
                  r"(?:wav|ogg)", "tuxfootball",
                  _kinds(crowd=("crowdcheer", "crowdboo", "crowdooh"), music=("titlemusic", "ingame"))),
           credit="Tux Football (Jason Wood), GPL-2+."),
    Source("extremetuxracer-data", "0.8.2-1", "e/extremetuxracer/extremetuxracer-data_0.8.2-1_all.deb",
           "8ce6c82e6fb89549d284f43f6c4b0a9d82e6c0e5da753bee0ef419276a21470c", 40596136, "GPL-2+", "noise", "test",
           ("etr",), _named(r"usr/share/games/etr/(?P<key>music)/(?P<name>[^/]+)\.ogg", "etr", {"music": "music"}),
           credit="Extreme Tux Racer music by Joseph Toscano, Christian Picon, Grady O'Connell and K. Schroeder, "
                  "GPL-2+."),
)


def check_split(sources: Sequence[Source] = SOURCES) -> None:
    """Raises ValueError when train and test share a package, a source id or a credited speaker."""
    sides = {split: [s for s in sources if s.split == split] for split in SPLITS}
    for what, key in (("package", lambda s: {s.package}), ("source id", lambda s: set(s.ids)),
                      ("speaker", lambda s: {v.lower() for v in s.speakers})):
        train, test = (set().union(*map(key, sides[split])) for split in SPLITS)
        if train & test:
            raise ValueError(f"train and test share {what}s: {sorted(train & test)}")


# --- download --------------------------------------------------------------------------------

def _verify(source: Source, path: str, hint: str) -> None:
    actual = sha256_file(path)
    if actual != source.sha256:
        raise ValueError(f"{source.package} {source.version}: {path} has sha256 {actual}, the pinned one is "
                         f"{source.sha256}; {hint}")


def download(source: Source, cache: str, mirror: str = POOL, attempts: int = 3) -> str:
    """The verified .deb of `source` in `cache`, downloaded when it is not there yet."""
    path = os.path.join(cache, source.file_name)
    if os.path.exists(path):
        _verify(source, path, "delete the file to download it again")
        logger.info("%s: reusing %s", source.package, path)
        return path
    os.makedirs(cache, exist_ok=True)
    url = mirror.rstrip("/") + "/" + source.pool_path
    part = path + ".part"
    for attempt in range(1, attempts + 1):
        logger.info("%s: downloading %s (%.1f MB)", source.package, url, source.size / 1e6)
        try:
            with urllib.request.urlopen(url, timeout=60) as response, open(part, "wb") as f:
                shutil.copyfileobj(response, f, _CHUNK)
            break
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise RuntimeError(f"{source.package} {source.version}: {url} is not in the pool (404); Debian "
                                   "drops old versions, so pass --mirror https://snapshot.debian.org/archive/debian/"
                                   "<date>/pool/main/ with a date when it was current") from e
            error: Exception = e
        except (urllib.error.URLError, OSError) as e:
            error = e
        if attempt == attempts:
            raise RuntimeError(f"{source.package} {source.version}: downloading {url} failed {attempts} times, "
                               f"last: {error}") from error
        logger.warning("%s: %s; retrying", source.package, error)
        time.sleep(5 * attempt)
    try:
        _verify(source, part, f"the download from {url} is not the pinned file (deleted)")
    except ValueError:
        os.remove(part)
        raise
    os.replace(part, path)
    return path


# --- conversion ------------------------------------------------------------------------------

def read_audio(member: Union[str, bytes], label: str = "") -> Tuple[np.ndarray, int]:
    """(frames x channels float32, sample rate) of a file path or WAV/OGG bytes; .gsm through sox."""
    if isinstance(member, bytes):
        audio, rate = soundfile.read(io.BytesIO(member), dtype="float32", always_2d=True)
    elif member.lower().endswith(".gsm"):
        if not shutil.which("sox"):
            raise RuntimeError(f"{label or member}: GSM 6.10 needs the sox command (Debian package sox)")
        wav = subprocess.run(["sox", "-t", "gsm", member, "-t", "wav", "-e", "signed-integer", "-b", "16", "-"],
                             check=True, capture_output=True).stdout
        audio, rate = soundfile.read(io.BytesIO(wav), dtype="float32", always_2d=True)
    else:
        audio, rate = soundfile.read(member, dtype="float32", always_2d=True)
    return audio, int(rate)


def prepare(audio: np.ndarray, rate: int, min_seconds: float, label: str,
            max_clipped: float = 1.0) -> Optional[np.ndarray]:
    """16 kHz mono float32 of `audio` (frames x channels at `rate`): channels averaged, digital
    silence trimmed from both ends, DC removed, resampled. None (the reason logged) when it is
    silent, shorter than `min_seconds` after trimming, or more than `max_clipped` of its frames
    reach full scale (CLIPPED) in some channel."""
    audio = np.asarray(audio, np.float32)
    audio = audio[:, None] if audio.ndim == 1 else audio
    mono = audio.mean(axis=1)
    loud = np.flatnonzero(np.abs(mono) > SILENCE)
    if not len(loud):
        logger.debug("%s: dropped, silent (%d samples, none above %.1e)", label, len(mono), SILENCE)
        return None
    mono = mono[loud[0]:loud[-1] + 1]
    if len(mono) < min_seconds * rate:
        logger.debug("%s: dropped, %.2f s after trimming silence (under %.1f s)", label, len(mono) / rate,
                     min_seconds)
        return None
    clipped = float(np.mean(np.abs(audio[loud[0]:loud[-1] + 1]).max(axis=1) >= CLIPPED))
    if clipped > max_clipped:
        logger.debug("%s: dropped, clipped (%.1f%% of samples at full scale, over %.1f%%)", label, 100 * clipped,
                     100 * max_clipped)
        return None
    mono = mono - mono.mean()
    if rate != SR:
        mono = soxr.resample(mono, rate, SR, quality="HQ")
    return np.clip(mono, -1.0, 32767 / 32768).astype(np.float32)


class Written(NamedTuple):
    seconds: float
    source_sample_rate: int
    sha256: str  # of the PCM16 samples written (duplicates are found by it)


def convert(member: Union[str, bytes], out_path: str, min_seconds: float, label: str = "",
            skip: Sequence[str] = (), max_clipped: float = 1.0) -> Optional[Written]:
    """Writes `member` (a path or audio bytes) as a 16 kHz mono PCM16 WAV at `out_path`, or
    returns None, writing nothing, when it is dropped: unreadable, silent, too short, clipped
    (`prepare`), or its samples' sha256 is in `skip` (a copy); the reason is logged."""
    label = label or (member if isinstance(member, str) else "audio bytes")
    try:
        audio, rate = read_audio(member, label)
    except (RuntimeError, subprocess.CalledProcessError, ValueError) as e:
        logger.warning("%s: dropped, unreadable: %s", label, e)
        return None
    mono = prepare(audio, rate, min_seconds, label, max_clipped)
    if mono is None:
        return None
    pcm = np.round(mono * 32768).astype(np.int16)
    digest = hashlib.sha256(pcm.tobytes()).hexdigest()
    if digest in skip:
        logger.debug("%s: dropped, the same samples as a file already written", label)
        return None
    os.makedirs(os.path.dirname(out_path) or ".", exist_ok=True)
    soundfile.write(out_path, pcm, SR, subtype="PCM_16")
    return Written(len(pcm) / SR, rate, digest)


# --- the corpus ------------------------------------------------------------------------------

def _unpack(deb: str, into: str, package: str) -> None:
    if not shutil.which("dpkg-deb"):
        raise RuntimeError(f"{package}: unpacking {deb} needs dpkg-deb (Debian package dpkg)")
    result = subprocess.run(["dpkg-deb", "-x", deb, into], capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{package}: dpkg-deb -x {deb} failed: {result.stderr.strip()}")


def _unique(path: str, taken: set) -> str:
    stem, n = path[:-4], 2
    while path in taken:
        path, n = f"{stem}-{n}.wav", n + 1
    taken.add(path)
    return path


def extract(source: Source, deb: str, out: str, taken: set, seen: set) -> Tuple[List[Dict[str, str]], int]:
    """Writes the chosen members of `deb` below `out`, none whose samples' sha256 is in `seen`;
    (manifest rows, files dropped). Adds the paths written to `taken`, their samples' sha256 to `seen`."""
    rows, dropped = [], 0
    min_seconds = SPEECH_MIN_SECONDS if source.role == "speech" else NOISE_MIN_SECONDS
    max_clipped = SPEECH_MAX_CLIPPED if source.role == "speech" else 1.0
    with tempfile.TemporaryDirectory(prefix="real-audio-") as root:
        _unpack(deb, root, source.package)
        for member in (source.members or _files)(root):
            pick = source.pick(member)
            if pick is None:
                continue
            if pick.source not in source.ids:
                raise ValueError(f"{source.package}: {member.name} maps to source {pick.source!r}, not one of its "
                                 f"declared ids {source.ids}")
            if source.role == "noise" and pick.kind not in NOISE_KINDS:
                raise ValueError(f"{source.package}: {member.name} maps to noise kind {pick.kind!r}, not one of "
                                 f"{NOISE_KINDS}")
            if source.role == "speech":
                rel = f"speech_{source.split}/{pick.source}/{pick.name}.wav"
            else:
                rel = f"noise_{source.split}/{pick.kind}/{pick.source}__{pick.name}.wav"
            rel = _unique(rel, taken)
            label = f"{source.package}:{member.name}"
            done = convert(member.data if member.data is not None else member.file, os.path.join(out, rel),
                           min_seconds, label, skip=seen, max_clipped=max_clipped)
            if done is None:
                taken.discard(rel)
                dropped += 1
                continue
            seconds, rate, digest = done
            seen.add(digest)
            rows.append({"path": rel, "role": source.role, "split": source.split, "kind": pick.kind,
                         "source": pick.source, "package": source.package, "version": source.version,
                         "licence": pick.licence or source.licence, "member": member.name,
                         "seconds": f"{seconds:.3f}", "source_sample_rate": str(rate), "note": member.note})
    produced = {row["source"] for row in rows}
    for missing in sorted(set(source.ids) - produced):
        logger.warning("%s: declared source %s produced no file", source.package, missing)
    return rows, dropped


def _readme(sources: Sequence[Source], summary: Dict[Tuple[str, str], Dict[str, float]],
            rows: Sequence[Dict[str, str]]) -> str:
    lines = ["Real recorded speech and noise, written by `python -m pipeline.datagen.real`",
             "(16 kHz mono PCM16 WAV; manifest.csv names each file's package, version, licence and member).",
             "", "Train and test share no package, source id or credited speaker.", ""]
    lines += [f"{role} {split}: {int(g['files'])} files, {g['minutes']:.1f} min"
              for (role, split), g in sorted(summary.items())]
    lines += ["", "Licences and attribution. The Asterisk sounds are Creative Commons: CC-BY-SA-3.0 (the en, es",
              "and fr core prompts, the Menardi prompts, the music on hold; the it and ru core prompts are",
              "CC-BY-3.0 by Debian's copyright file). CC-BY and CC-BY-SA require the credits below to travel",
              "with the audio and anything derived from it; CC-BY-SA also requires derived audio to be shared",
              "under the same licence. GPL/LGPL data: the Debian source package is the preferred form.", ""]
    for s in sources:
        lines.append(f"- {s.package} {s.version} (Debian, {s.licence}; {s.role} {s.split}): {s.credit}")
    noted = sorted((row for row in rows if row.get("note")), key=lambda row: row["path"])
    if noted:
        lines += ["", "Credits of the container entries (as the package states them):"]
        lines += [f"- {row['path']} ({row['licence']}): {row['note']}" for row in noted]
    return "\n".join(lines) + "\n"


def fetch(out: str, cache: str, sources: Sequence[Source] = SOURCES,
          mirror: str = POOL) -> Dict[Tuple[str, str], Dict[str, float]]:
    """Downloads (or reuses) every package, writes the corpus, manifest.csv and README.txt to `out`;
    {(role, split): {"files", "minutes", "dropped"}}. The four corpus folders are rewritten whole."""
    check_split(sources)
    debs = [download(source, cache, mirror) for source in sources]
    for role in ROLES:
        for split in SPLITS:
            shutil.rmtree(os.path.join(out, f"{role}_{split}"), ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    rows: List[Dict[str, str]] = []
    summary = {(role, split): {"files": 0, "minutes": 0.0, "dropped": 0} for role in ROLES for split in SPLITS}
    taken: set = set()  # paths written
    seen: set = set()  # sha256 of the samples written: a copy of a train file never reaches the test
    for source, deb in zip(sources, debs):
        new, dropped = extract(source, deb, out, taken, seen)
        minutes = sum(float(r["seconds"]) for r in new) / 60
        logger.info("%s %s: %d files, %.1f min (%d dropped: silent, too short, clipped, unreadable or copies)",
                    source.package, source.version, len(new), minutes, dropped)
        group = summary[(source.role, source.split)]
        group["files"] += len(new)
        group["minutes"] += minutes
        group["dropped"] += dropped
        rows += new
    with open(os.path.join(out, "manifest.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, MANIFEST_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(sorted(rows, key=lambda r: r["path"]))
    with open(os.path.join(out, "README.txt"), "w") as f:
        f.write(_readme(sources, summary, rows))
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="data/real")
    parser.add_argument("--cache", default="data/real-cache", help="the downloaded .deb files (reused when verified)")
    parser.add_argument("--mirror", default=POOL, help="a Debian pool/main/ URL (e.g. a snapshot.debian.org one)")
    parser.add_argument("--verbose", action="store_true", help="log every dropped file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(message)s")
    started = time.time()
    summary = fetch(args.out, args.cache, mirror=args.mirror)
    for (role, split), group in sorted(summary.items()):
        print(f"{role} {split}: {group['files']} files, {group['minutes']:.1f} min "
              f"({group['dropped']} dropped) in {args.out}/{role}_{split}")
    print(f"{time.time() - started:.0f} s; manifest {os.path.join(args.out, 'manifest.csv')}")


if __name__ == "__main__":
    main()
