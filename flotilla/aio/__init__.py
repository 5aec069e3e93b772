"""General asyncio helpers, the bottom floor: a clock to inject, stopping tasks. The standard
library only, so every other floor of flotilla may use them."""
