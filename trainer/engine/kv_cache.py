"""`SlotKVCache`: one preallocated KV buffer per layer, one row ("slot") per live sequence.

Rows are kept compact (live sequences occupy slots 0..n-1) so a decode step reads a plain
view `K[:n, :, :L]` — no gather, no copy. Each row has its own length; the engine passes a
4D additive mask so a row attends only to its own columns, and per-row position ids so
RoPE is right. Buffers grow (doubling) in both rows and columns as needed.

The object is handed to a transformers model as `past_key_values`; the model only calls
`update(key, value, layer_idx)`, which writes the new keys where the engine said and
returns the keys/values attention should see.
"""

from __future__ import annotations

import torch


class SlotKVCache:
    def __init__(
        self,
        num_layers: int,
        num_kv_heads: int,
        head_dim: int,
        dtype: torch.dtype,
        device: torch.device | str,
        rows: int,
        columns: int,
    ):
        self.num_layers = num_layers
        self._shape_tail = (num_kv_heads, head_dim)
        self.dtype = dtype
        self.device = torch.device(device)
        self.rows = 0
        self.columns = 0
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self._resize(rows, columns, keep_rows=0, keep_columns=0)
        # Set by the engine before each forward pass (see `prepare_prefill` / `prepare_decode`).
        self._mode = "decode"
        self._row_start = 0
        self._num = 0
        self._positions: torch.Tensor | None = None
        self._read_columns = 0

    def _resize(self, rows: int, columns: int, keep_rows: int, keep_columns: int) -> None:
        heads, dim = self._shape_tail
        new_k, new_v = [], []
        for layer in range(self.num_layers):
            k = torch.zeros(rows, heads, columns, dim, dtype=self.dtype, device=self.device)
            v = torch.zeros_like(k)
            if keep_rows and keep_columns:
                k[:keep_rows, :, :keep_columns] = self.keys[layer][:keep_rows, :, :keep_columns]
                v[:keep_rows, :, :keep_columns] = self.values[layer][:keep_rows, :, :keep_columns]
            new_k.append(k)
            new_v.append(v)
        self.keys, self.values = new_k, new_v
        self.rows, self.columns = rows, columns

    def ensure_capacity(self, rows: int, columns: int, live_rows: int, live_columns: int) -> None:
        """Grow (doubling) so `rows` slots of `columns` tokens fit, keeping live contents."""
        if rows <= self.rows and columns <= self.columns:
            return
        new_rows, new_columns = self.rows, self.columns
        while new_rows < rows:
            new_rows *= 2
        while new_columns < columns:
            new_columns *= 2
        self._resize(new_rows, new_columns, keep_rows=live_rows, keep_columns=live_columns)

    def move_row(self, src: int, dst: int, length: int) -> None:
        """Copy the first `length` columns of row `src` into row `dst` (compaction)."""
        for layer in range(self.num_layers):
            self.keys[layer][dst, :, :length] = self.keys[layer][src, :, :length]
            self.values[layer][dst, :, :length] = self.values[layer][src, :, :length]

    def prepare_prefill(self, row_start: int, num: int, length: int) -> None:
        """Next forward writes `num` right-padded prompts of `length` tokens at columns
        0..length-1 of rows row_start..row_start+num-1."""
        self._mode, self._row_start, self._num, self._read_columns = (
            "prefill",
            row_start,
            num,
            length,
        )

    def prepare_decode(self, num: int, positions: torch.Tensor, read_columns: int) -> None:
        """Next forward writes one token per row 0..num-1 at column `positions[row]` and
        attends over columns 0..read_columns-1."""
        self._mode, self._num, self._positions, self._read_columns = (
            "decode",
            num,
            positions,
            read_columns,
        )

    # -- the transformers Cache surface ---------------------------------------------------
    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs
    ):
        k, v = self.keys[layer_idx], self.values[layer_idx]
        if self._mode == "prefill":
            rows = slice(self._row_start, self._row_start + self._num)
            length = key_states.shape[2]
            k[rows, :, :length] = key_states
            v[rows, :, :length] = value_states
            return key_states, value_states
        n = self._num
        row_index = torch.arange(n, device=k.device)
        k[row_index, :, self._positions] = key_states[:, :, 0]
        v[row_index, :, self._positions] = value_states[:, :, 0]
        return k[:n, :, : self._read_columns], v[:n, :, : self._read_columns]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self._read_columns

    def __len__(self) -> int:
        return self.num_layers
