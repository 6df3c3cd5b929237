"""Type stubs of the hesper package (docs/Python.md)."""

from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

import numpy as np

from . import exp as exp
from ._hesper import Graph as Graph
from ._hesper import Lane as Lane
from ._hesper import Program as Program
from ._hesper import Tensor as Tensor
from ._hesper import interpret as interpret
from ._hesper import parse as parse

__version__: str

class Device:
    backend: str
    index: int
    name: str
    type: str
    subgroup_size: int
    shared_memory_bytes: int
    threads: int

def devices() -> List[Device]: ...
def compile(graph: Graph, device: str = "auto", fuse: bool = True,
            threads: int = 0) -> Program: ...

Prompt = Union[str, bytes, Sequence[int]]
Stop = Union[None, str, Sequence[str]]

class Llama:
    model_path: str
    finish_reason: str
    last_tokens: List[int]
    metadata: Dict[str, str]
    device: str
    logits: np.ndarray
    def __init__(self, model_path: str, n_ctx: int = 512, n_batch: int = 32,
                 device: str = "auto", n_threads: int = 0, seed: int = -1,
                 chat_format: Optional[str] = None,
                 verbose: bool = False,
                 program_cache: bool = True) -> None: ...
    def n_vocab(self) -> int: ...
    def n_ctx(self) -> int: ...
    def tokenize(self, text: Union[str, bytes], add_bos: bool = True,
                 special: bool = False) -> List[int]: ...
    def detokenize(self, tokens: Sequence[int]) -> bytes: ...
    def eval(self, tokens: Sequence[int]) -> None: ...
    def reset(self) -> None: ...
    def generate_ids(self, prompt_ids: Sequence[int], max_tokens: int = 16,
                     temperature: float = 0.8, top_k: int = 40,
                     top_p: float = 0.95, min_p: float = 0.05,
                     repeat_penalty: float = 1.0, seed: Optional[int] = None,
                     stop_at_eog: bool = True) -> Iterator[int]: ...
    def create_completion(self, prompt: Prompt, max_tokens: int = 16,
                          temperature: float = 0.8, top_p: float = 0.95,
                          top_k: int = 40, min_p: float = 0.05,
                          repeat_penalty: float = 1.0, stop: Stop = None,
                          stream: bool = False,
                          seed: Optional[int] = None) -> Any: ...
    def __call__(self, prompt: Prompt, max_tokens: int = 16,
                 temperature: float = 0.8, top_p: float = 0.95,
                 top_k: int = 40, min_p: float = 0.05,
                 repeat_penalty: float = 1.0, stop: Stop = None,
                 stream: bool = False, seed: Optional[int] = None) -> Any: ...
    def create_chat_completion(self, messages: Sequence[Dict[str, str]],
                               max_tokens: Optional[int] = None,
                               temperature: float = 0.8, top_p: float = 0.95,
                               top_k: int = 40, min_p: float = 0.05,
                               repeat_penalty: float = 1.0, stop: Stop = None,
                               stream: bool = False,
                               seed: Optional[int] = None) -> Any: ...
