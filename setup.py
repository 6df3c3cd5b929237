"""Installs the hesper Python package from a build: run `make build` first,
then `python3 -m venv v && v/bin/pip install --no-build-isolation .`
(offline: the package and its compiled extension are taken from
build/python/hesper; set HESPER_BUILD_DIR for another build folder).
docs/Python.md."""

import os

from setuptools import setup
from setuptools.dist import Distribution

build = os.environ.get("HESPER_BUILD_DIR", "build")
package = os.path.join(build, "python", "hesper")
if not os.path.isdir(package):
    raise SystemExit(f"{package} does not exist: run `make build` first "
                     "(or set HESPER_BUILD_DIR)")


class BinaryDistribution(Distribution):
    """The package holds a compiled extension: a platform wheel."""

    def has_ext_modules(self):
        return True


setup(
    name="hesper",
    version="0.1.0",
    description="Run GGUF models with Hesper from Python",
    packages=["hesper"],
    package_dir={"hesper": package},
    package_data={"hesper": ["*.so", "*.pyi", "py.typed"]},
    install_requires=["numpy"],
    distclass=BinaryDistribution,
    zip_safe=False,
)
