"""The build backend of the Python client (PEP 517), in the standard library alone.

The client is one module without dependencies; building it needs nothing either, so `pip install
Sources/python-client` works offline and in an isolated build environment: this backend writes
the wheel (the module and its dist-info) and the sdist itself. The name and version come from
pyproject.toml's [project] table.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "mempressure_client.py"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("[project]", 1)[1].split("\n[", 1)[0]

    def field(key):
        match = re.search(r'^%s\s*=\s*"([^"]*)"' % key, table, re.MULTILINE)
        if not match:
            raise ValueError("pyproject.toml: [project] has no %s" % key)
        return match.group(1)

    return field("name"), field("version"), field("description"), field("requires-python")


def _metadata():
    name, version, summary, requires_python = _project()
    return "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n" % (name, version, summary, requires_python)


def _distribution():
    name, version, _, _ = _project()
    return re.sub(r"[-_.]+", "_", name), version


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    distribution, version = _distribution()
    dist_info = "%s-%s.dist-info" % (distribution, version)
    with open(os.path.join(HERE, MODULE), "rb") as f:
        module = f.read()
    files = [
        (MODULE, module),
        (dist_info + "/METADATA", _metadata().encode("utf-8")),
        (dist_info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: mempressure_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = io.StringIO()
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        record.write("%s,sha256=%s,%d\n" % (path, digest, len(data)))
    record.write("%s/RECORD,,\n" % dist_info)
    files.append((dist_info + "/RECORD", record.getvalue().encode("utf-8")))
    name = "%s-%s-py3-none-any.whl" % (distribution, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files:
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            wheel.writestr(info, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    distribution, version = _distribution()
    base = "%s-%s" % (distribution, version)
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for path in ("pyproject.toml", "mempressure_build.py", MODULE, "README.md"):
            sdist.add(os.path.join(HERE, path), arcname=base + "/" + path)
        data = _metadata().encode("utf-8")
        info = tarfile.TarInfo(base + "/PKG-INFO")
        info.size = len(data)
        sdist.addfile(info, io.BytesIO(data))
    return name
