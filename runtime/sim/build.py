"""The simulator's build: `aclnngen.runtime.cbuild` under the name it always had here.

The machinery moved down to the call path, whose C helper (runtime/callplan.py) is built the same
way; this name is that very module object, so code that sets its attributes (tests patch
`_run_compiler`) changes what every build uses.
"""

import sys

from aclnngen.runtime import cbuild

sys.modules[__name__] = cbuild
