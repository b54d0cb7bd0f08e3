"""Time `aclnngen generate` on many specs, beside the cost of only reading them.

    python benchmarks/regenerate.py              # 1,000 specs: renamed copies of the five
    python benchmarks/regenerate.py --specs 200

The specs are copies of specs/ops/*.yaml under new op names (NameNNNN), written to a temporary
directory. Two measurements in one run, side by side:

  read      strict YAML parsing and pydantic validation of every spec (the floor: any generator
            must at least load its input);
  generate  the full plan: load, validate, render every output in memory (what `aclnngen
            generate --specs DIR --out DIR` does before writing).

It prints seconds, ms per spec and the ratio generate / read.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path

from aclnngen.codegen.generate import package_layout, plan
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_all, load_products

SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def make_specs(root: Path, count: int) -> Path:
    specs = root / "specs"
    (specs / "ops").mkdir(parents=True)
    sources = sorted((DEFAULT_SPECS_DIR / "ops").glob("*.yaml"))
    for i in range(count):
        source = sources[i % len(sources)]
        text = source.read_text(encoding="utf-8")
        old = re.search(r"^name: (\w+)$", text, re.M).group(1)
        new = f"{old}{i:04d}"
        text = text.replace(f"aclnn{old}", f"aclnn{new}").replace(f"name: {old}\n", f"name: {new}\n")
        text = text.replace("# yaml-language-server: $schema=../schema/op.schema.json\n", "")
        # a renamed copy was captured from no seed page: with ../shared beside a checkout, the seed
        # page tests would compare it with its source's page and find the name differs
        text = re.sub(r"^  seed: .*\n", "", text, flags=re.M)
        (specs / "ops" / f"{SNAKE.sub('_', new).lower()}.yaml").write_text(text, encoding="utf-8")
    return specs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=1000, help="how many specs (default 1000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        specs = make_specs(Path(tmp), args.specs)
        products = load_products()
        start = time.perf_counter()
        loaded = load_all(specs, products)
        read = time.perf_counter() - start
        start = time.perf_counter()
        outputs = plan(specs, package_layout(Path(tmp) / "out" / "bench_ops"))
        generate = time.perf_counter() - start
    n = len(loaded)
    print(f"{n} specs, {len(outputs)} files rendered")
    print(f"{'':10}{'seconds':>10}{'ms/spec':>10}")
    print(f"{'read':10}{read:10.2f}{1000 * read / n:10.2f}")
    print(f"{'generate':10}{generate:10.2f}{1000 * generate / n:10.2f}")
    print(f"generate / read = {generate / read:.1f}")


if __name__ == "__main__":
    main()
