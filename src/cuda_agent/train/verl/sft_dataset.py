"""Stage 3 on verl: part 1's RFT parquet read by verl's multi-turn SFT trainer.

`cuda-agent train rft-data` writes the ten tool schemas as JSON text in the `tools` column (parquet cannot
hold ten differently shaped schemas in one typed column), and TRL's SFTTrainer accepts that; verl 0.9.1's
`MultiTurnSFTDataset` hands the column to the chat template as it is, which transformers rejects
("Tools should either be a JSON schema ..."). This subclass, named with verl's own extension point
(`data.custom_cls.path=pkg://cuda_agent.train.verl.sft_dataset data.custom_cls.name=RFTDataset`),
decodes the text into the schema list before anything is rendered; everything else is verl's.
"""

from __future__ import annotations

from typing import Any

from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

from cuda_agent.train.chat import chat_tools


class RFTDataset(MultiTurnSFTDataset):
    """verl's multi-turn SFT dataset over `rft-data` parquet (tools stored as JSON text)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.tools is not None:
            self.tools = [chat_tools(tools) if isinstance(tools, str) else tools for tools in self.tools]
