"""A mistyped asyncio program: mypy --strict must reject it (tests/test_aio_typing.py)."""

from __future__ import annotations

import kgroup.aio


async def wrong() -> None:
    async with kgroup.aio.Consumer(bootstrap_servers="localhost:9092", group_id="g") as consumer:
        async for record in consumer:
            text: str = record.value
            print(text)
