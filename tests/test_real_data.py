"""The real-audio fetcher (pipeline/datagen/real.py): a split without shared packages or speakers,
pinned packages, the conversion to 16 kHz mono PCM16, logged drops, checked hashes. No network."""
import csv
import dataclasses
import hashlib
import io
import logging
import os
import re
import struct
import subprocess
import urllib.request

import numpy as np
import pytest
import soundfile

from pipeline.datagen import real

# A member each source really has (from the pinned packages' file lists), and the source id it maps to.
KNOWN_MEMBERS = {
    "asterisk-core-sounds-en-wav": ("usr/share/asterisk/sounds/en_US_f_Allison/digits/1.wav", "asterisk_en_allison"),
    "asterisk-core-sounds-es-wav": ("usr/share/asterisk/sounds/es_MX_f_Allison/vm-intro.wav", "asterisk_es_allison"),
    "asterisk-core-sounds-fr-wav": ("usr/share/asterisk/sounds/fr_CA_f_June/letters/a.wav", "asterisk_fr_june"),
    "asterisk-core-sounds-it-wav": ("usr/share/asterisk/sounds/it_IT_m_Carlo/goodbye.wav", "asterisk_it_carlo"),
    "asterisk-core-sounds-ru-wav": ("usr/share/asterisk/sounds/ru_RU_f_IvrvoiceRU/hello.wav", "asterisk_ru_ivrvoice"),
    "tuxpaint-stamps-default": ("usr/share/tuxpaint/stamps/animals/birds/duck_desc_bg.ogg", "tuxpaint_bg"),
    "klettres-data": ("usr/share/klettres/en_GB/alpha/a.ogg", "klettres_en_gb"),
    "codec2-examples": ("usr/share/codec2/wav/hts1a.wav", "codec2"),
    "asterisk-prompt-it-menardi-wav": ("usr/share/asterisk/sounds/it_IT_f_Menardi/digits/7.wav",
                                       "asterisk_it_menardi"),
    "ktuberling-data": ("usr/share/ktuberling/sounds/nn/ball.opus", "ktuberling_nn"),
    "lincity-ng-data": ("usr/share/games/lincity-ng/sounds/TraficHigh1.wav", "lincity"),
    "asterisk-moh-opsound-wav": ("usr/share/asterisk/moh/macroform-cold_day.wav", "asterisk_moh"),
    "minetest-data": ("usr/share/games/minetest/games/minetest_game/mods/fire/sounds/fire_fire.1.ogg", "minetest"),
    "0ad-data": (f"{real.ZAD_ZIP}#audio/ambient/building/amb_trade_10.ogg", "0ad"),
    "scorched3d-data": ("usr/share/games/scorched3d/data/globalmods/apoc/data/wav/misc/factoryloop1.wav", "scorched3d"),
    "searchandrescue-data": ("usr/share/games/searchandrescue/sounds/hh65/engine_start.wav", "searchandrescue"),
    "etw-data": ("usr/share/games/etw/crowd/crowd07.wav", "etw"),
    "supertuxkart-data": ("usr/share/games/supertuxkart/data/sfx/lenautile_restaurant.ogg", "supertuxkart"),
    "unknown-horizons": ("usr/share/unknown-horizons/content/audio/sounds/lumberjack_long.ogg", "unknown_horizons"),
    "openttd-opensfx": (f"{real.OPENSFX_CAT}#29", "opensfx"),
    "tuxfootball": ("usr/share/games/tuxfootball/sound/crowdcheer.wav", "tuxfootball"),
    "extremetuxracer-data": ("usr/share/games/etr/music/race1-jt.ogg", "etr"),
}
NOT_TAKEN = {  # members a source must leave out
    "asterisk-core-sounds-en-wav": ("usr/share/asterisk/sounds/en_US_f_Allison/beep.wav",
                                    "usr/share/asterisk/sounds/en_US_f_Allison/silence/1.wav"),
    "codec2-examples": ("usr/share/codec2/wav/all.wav", "usr/share/codec2/raw/hts1a.raw"),
    "ktuberling-data": ("usr/share/ktuberling/sounds/sr@latin/ball.ogg",),
    "lincity-ng-data": ("usr/share/games/lincity-ng/sounds/Click.wav",
                        "usr/share/games/lincity-ng/sounds/WindowOpen.wav"),
    "tuxfootball": ("usr/share/games/tuxfootball/sound/kick.wav",),
    "tuxpaint-stamps-default": ("usr/share/tuxpaint/stamps/animals/birds/duck_desc_es.ogg",  # recorded clipped
                                "usr/share/tuxpaint/stamps/animals/birds/duck.ogg"),  # the stamp's sound effect
    "openttd-opensfx": (f"{real.OPENSFX_CAT}#21",),  # the beep
    "0ad-data": (f"{real.ZAD_ZIP}#audio/music/celtic/c1_ship.ogg",
                 f"{real.ZAD_ZIP}#audio/actor/human/death/death_11.ogg",
                 "usr/share/games/0ad/mods/public/audio/ambient/water/wave_21.ogg"),  # only inside the zip
    "scorched3d-data": ("usr/share/games/scorched3d/data/globalmods/apoc/data/wav/misc/scream1.wav",
                        "usr/share/games/scorched3d/data/globalmods/apoc/data/wav/explosions/quake.wav"),
    "etw-data": ("usr/share/games/etw/snd/hallelujah.wav", "usr/share/games/etw/snd/shoot.wav",
                 "usr/share/games/etw/music/back1.wav"),
    "supertuxkart-data": ("usr/share/games/supertuxkart/data/sfx/static-radio.ogg",
                          "usr/share/games/supertuxkart/data/sfx/river_loop.ogg",
                          "usr/share/games/supertuxkart/data/library/stklib_steamLocomotive_a/steamLocomotive.ogg"),
    "unknown-horizons": ("usr/share/unknown-horizons/content/audio/sounds/chapel.ogg",
                         "usr/share/unknown-horizons/content/audio/voice/en/0/new_world/0.ogg"),
    "searchandrescue-data": ("usr/share/games/searchandrescue/sounds/crash_ground.wav",
                             "usr/share/games/searchandrescue/music/menus01.wav"),
}


def _sides(key):
    return [set().union(*(key(s) for s in real.SOURCES if s.split == split)) for split in real.SPLITS]


def test_train_and_test_share_no_package_source_id_or_speaker():
    for key in (lambda s: {s.package}, lambda s: set(s.ids), lambda s: {v.lower() for v in s.speakers}):
        train, test = _sides(key)
        assert train and test and not train & test, sorted(train & test)
    assert {(s.role, s.split) for s in real.SOURCES} == {(r, p) for r in real.ROLES for p in real.SPLITS}
    real.check_split()
    codec2 = next(s for s in real.SOURCES if s.package == "codec2-examples")
    with pytest.raises(ValueError, match="source id.*codec2"):  # the check itself notices a leak
        real.check_split(real.SOURCES + (dataclasses.replace(codec2, package="codec2-copy", split="train"),))


def test_every_source_is_pinned_and_picks_its_own_members():
    assert set(KNOWN_MEMBERS) == {s.package for s in real.SOURCES}
    assert len({s.file_name for s in real.SOURCES}) == len(real.SOURCES)
    for s in real.SOURCES:
        assert re.fullmatch(r"[0-9a-f]{64}", s.sha256), s.package
        assert s.version and s.licence and s.size > 0 and s.credit, s.package
        upstream = s.version.split(":", 1)[-1]  # the pool's file names drop the epoch
        assert re.fullmatch(rf"[a-z0-9]/[a-z0-9.+-]+/{re.escape(s.package)}_{re.escape(upstream)}_(all|amd64)\.deb",
                            s.pool_path), s.pool_path
        assert s.role in real.ROLES and s.split in real.SPLITS
        member, source_id = KNOWN_MEMBERS[s.package]
        pick = s.pick(real.Member(member, "/nonexistent"))
        assert pick is not None and pick.source == source_id and source_id in s.ids, (s.package, pick)
        assert (pick.kind in real.NOISE_KINDS) == (s.role == "noise"), (s.package, pick)
        for other in NOT_TAKEN.get(s.package, ()):
            assert s.pick(real.Member(other, "/nonexistent")) is None, other


def _stereo(seconds, rate, lead, tail, dc=0.0):
    t = np.arange(int(seconds * rate)) / rate
    left = 0.5 * np.sin(2 * np.pi * 440 * t) + dc
    right = 0.3 * np.sin(2 * np.pi * 440 * t) + dc
    body = np.stack([left, right], axis=1)
    return np.concatenate([np.zeros((int(lead * rate), 2)), body, np.zeros((int(tail * rate), 2))])


@pytest.mark.parametrize("fmt, tolerance_s", [("wav", 0.001), ("ogg", 0.02)])
def test_a_stereo_44k_file_becomes_trimmed_16k_mono_pcm16(tmp_path, fmt, tolerance_s):
    src = str(tmp_path / f"in.{fmt}")
    soundfile.write(src, _stereo(1.0, 44100, lead=0.4, tail=0.25, dc=0.1), 44100)
    written = real.convert(src, str(tmp_path / "out.wav"), real.SPEECH_MIN_SECONDS, "in",
                           max_clipped=real.SPEECH_MAX_CLIPPED)
    info = soundfile.info(str(tmp_path / "out.wav"))
    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
    assert abs(info.duration - 1.0) < tolerance_s, info.duration  # 0.4 s lead and 0.25 s tail gone
    assert written.seconds == pytest.approx(info.duration) and written.source_sample_rate == 44100
    audio, _ = soundfile.read(str(tmp_path / "out.wav"))
    assert abs(audio.mean()) < 0.01  # the DC offset removed
    assert np.sqrt(np.mean(audio ** 2)) == pytest.approx(0.4 / np.sqrt(2), rel=0.03)  # the channels' mean tone
    assert np.abs(audio[:160]).max() > 0.05 and np.abs(audio[-160:]).max() > 0.05  # no silence left at the ends


@pytest.mark.parametrize("audio, min_seconds, reason", [
    (np.zeros((44100, 2)), real.SPEECH_MIN_SECONDS, "silent"),
    (np.zeros((0, 1)), real.SPEECH_MIN_SECONDS, "silent (0 samples"),  # OpenSFX's "unused" entries
    (np.tile([[1 / 32768], [-1 / 32768]], (22050, 2)), real.SPEECH_MIN_SECONDS, "silent"),  # dither only
    (_stereo(0.2, 44100, lead=0.5, tail=0.5), real.SPEECH_MIN_SECONDS, "0.20 s after trimming"),
    (_stereo(0.8, 44100, lead=0.0, tail=0.0), real.NOISE_MIN_SECONDS, "0.80 s after trimming"),
    (np.clip(4 * _stereo(1.0, 44100, lead=0.1, tail=0.1), -1, 1), real.SPEECH_MIN_SECONDS, "clipped"),
])
def test_silent_short_or_clipped_files_are_dropped_with_a_logged_reason(tmp_path, caplog, audio, min_seconds,
                                                                         reason):
    src = str(tmp_path / "in.wav")
    soundfile.write(src, audio, 44100, subtype="PCM_16")
    caplog.set_level(logging.DEBUG, logger=real.logger.name)
    assert real.convert(src, str(tmp_path / "out.wav"), min_seconds, "pkg:in.wav",
                        max_clipped=real.SPEECH_MAX_CLIPPED) is None
    assert not os.path.exists(tmp_path / "out.wav")
    assert any("pkg:in.wav" in r.getMessage() and reason in r.getMessage() for r in caplog.records), caplog.text


def test_an_unreadable_member_is_dropped_not_raised(tmp_path, caplog):
    src = tmp_path / "broken.ogg"
    src.write_bytes(b"OggS but not really")
    assert real.convert(str(src), str(tmp_path / "out.wav"), 0.3, "pkg:broken.ogg") is None
    assert "pkg:broken.ogg: dropped, unreadable" in caplog.text


def _fake_source(**changes):
    codec2 = next(s for s in real.SOURCES if s.package == "codec2-examples")
    return dataclasses.replace(codec2, **changes)


def test_a_deb_whose_sha256_differs_from_the_pin_is_refused(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("no download expected: the file is in the cache")
    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    source = _fake_source()
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / source.file_name).write_bytes(b"not the pinned package")
    actual = hashlib.sha256(b"not the pinned package").hexdigest()
    with pytest.raises(ValueError) as raised:
        real.fetch(str(tmp_path / "out"), str(tmp_path / "cache"), sources=(source,))
    message = str(raised.value)
    assert source.package in message and source.sha256 in message and actual in message, message
    assert not (tmp_path / "out" / "manifest.csv").exists()


def _deb(tmp_path, name, files):
    """A real .deb (dpkg-deb -b) holding `files` ({path: audio bytes})."""
    root = tmp_path / name
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(f"Package: {name}\nVersion: 1\nArchitecture: all\n"
                                             "Maintainer: t <t@example.com>\nDescription: test\n")
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    deb = tmp_path / f"{name}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(root), str(deb)], check=True, capture_output=True)
    return deb.read_bytes()


def _wav(seconds, rate=8000, seed=0):
    buffer = io.BytesIO()
    soundfile.write(buffer, np.random.default_rng(seed).uniform(-0.5, 0.5, int(seconds * rate)), rate, format="WAV",
                    subtype="PCM_16")
    return buffer.getvalue()


def test_fetch_writes_the_layout_manifest_and_readme_from_cached_debs(tmp_path):
    speech = _deb(tmp_path, "speech", {"usr/share/codec2/wav/hts1a.wav": _wav(1.0, seed=1),
                                       "usr/share/codec2/wav/zz_copy.wav": _wav(1.0, seed=1),  # hts1a again: dropped
                                       "usr/share/codec2/wav/all.wav": _wav(2.0, seed=2)})  # not taken
    noise = _deb(tmp_path, "noise", {"usr/share/games/tuxfootball/sound/crowdboo.wav": _wav(1.5, 22050, seed=3),
                                     "usr/share/games/tuxfootball/sound/crowdooh.wav": _wav(0.5, seed=4)})  # short
    tuxfootball = next(s for s in real.SOURCES if s.package == "tuxfootball")
    sources = (_fake_source(sha256=hashlib.sha256(speech).hexdigest(), size=len(speech)),
               dataclasses.replace(tuxfootball, sha256=hashlib.sha256(noise).hexdigest(), size=len(noise)))
    (tmp_path / "cache").mkdir()
    for source, data in zip(sources, (speech, noise)):
        (tmp_path / "cache" / source.file_name).write_bytes(data)
    out = tmp_path / "out"
    summary = real.fetch(str(out), str(tmp_path / "cache"), sources=sources)
    assert summary[("speech", "test")]["files"] == 1 and summary[("speech", "test")]["dropped"] == 1
    assert summary[("noise", "test")]["files"] == 1 and summary[("noise", "test")]["dropped"] == 1
    assert summary[("noise", "test")]["minutes"] == pytest.approx(1.5 / 60, abs=1e-3)
    with open(out / "manifest.csv") as f:
        rows = list(csv.DictReader(f))
    assert tuple(rows[0]) == real.MANIFEST_COLUMNS
    assert [r["path"] for r in rows] == ["noise_test/crowd/tuxfootball__crowdboo.wav", "speech_test/codec2/hts1a.wav"]
    assert {k: rows[0][k] for k in ("role", "split", "kind", "source", "package", "source_sample_rate", "member")} == {
        "role": "noise", "split": "test", "kind": "crowd", "source": "tuxfootball", "package": "tuxfootball",
        "source_sample_rate": "22050", "member": "usr/share/games/tuxfootball/sound/crowdboo.wav"}
    for r in rows:
        info = soundfile.info(str(out / r["path"]))
        assert (info.samplerate, info.channels) == (16000, 1) and float(r["seconds"]) == pytest.approx(info.duration)
    assert "GPL-2+" in (out / "README.txt").read_text() and "Tux Football" in (out / "README.txt").read_text()


def test_opensfx_container_entries_are_parsed():
    wavs = [_wav(0.1, seed=5), _wav(0.2, seed=6)]
    names = [b'"Applause". License: Creative Commons Zero 1.0.\0', b'"Wind".\0']
    table, body = b"", b""
    offset = 8 * len(wavs)
    for name, wav in zip(names, wavs):
        table += struct.pack("<II", offset | 0x80000000, len(wav))
        entry = bytes([len(name)]) + name + wav
        body += entry
        offset += len(entry)
    entries = list(real.opensfx_entries(table + body))
    assert [(i, note, data) for i, note, data in entries] == [
        (0, '"Applause". License: Creative Commons Zero 1.0.', wavs[0]), (1, '"Wind".', wavs[1])]
    pick = real.SOURCES[[s.package for s in real.SOURCES].index("openttd-opensfx")].pick(
        real.Member(f"{real.OPENSFX_CAT}#29", "x", wavs[0], entries[0][1]))
    assert pick == real.Pick("opensfx", "29_applause", "crowd", "CC0-1.0")
    with pytest.raises(ValueError, match="runs past the end"):
        list(real.opensfx_entries(table + body[:-10], "cut.cat"))
