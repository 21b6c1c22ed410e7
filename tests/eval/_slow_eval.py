"""A subprocess for the store tests: a slow, deterministic adaptor evaluated into a SQLite file.

usage: python _slow_eval.py DB METHOD_NAME N_INSTANCES DELAY [SHARD]
"""

import asyncio
import sys

from _eval_toys import EndsWithB, ToyDataset

from genlm_lab.eval import ModelOutput, ModelResponse, run_evaluation


def main() -> None:
    db, name, n, delay = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    shard = sys.argv[5] if len(sys.argv) > 5 else None

    async def model(instance, output_dir, replicate):
        await asyncio.sleep(delay)
        text = "ab" if int(instance.instance_id) % 3 else "ba"
        return ModelOutput(responses=[ModelResponse(response=text, weight=1.0)])

    dataset = ToyDataset([f"p{i}" for i in range(n)])
    asyncio.run(
        run_evaluation(
            dataset,
            model,
            EndsWithB(),
            store=db,
            method=name,
            model_id="slow toy",
            domain="toy",
            max_concurrency=2,
            shard=shard,
        )
    )
    print("done", flush=True)


if __name__ == "__main__":
    main()
