"""The device inventory and a baseline's `expect` end to end (issue 28), without the hardware: a fake
NVML with 8 GPUs and a fake sysfs tree (InfiniBand ports, NVMe drives, the PCI tree between them)
stand in for an 8-GPU node; `check` must name exactly the node's broken parts."""
import json
import os

from conftest import FAST, load_report, run
from test_acceptance import fake_nvml_env, gpu, write

RUN = ["run", "--filter", "^health/gpu_nvlink$", *FAST]

EXPECT = {"gpus": 8, "nvlinks_per_gpu": 18, "ib_ports_active": 8, "ib_rate_gbps": 400, "nvme_drives": 2,
          "same_across_gpus": ["vbios", "power_limit_w"],
          "gpu": {"persistence_mode": True, "ecc_enabled": True, "mig_enabled": False}}


def identity(i, **overrides):
    g = gpu(uuid=f"GPU-{i:04d}", serial=f"16501{i:02d}", vbios="96.00.89.00.01",
            pci_bus_id=f"00000000:{0x17 + i:02X}:00.0", memory_total_mib=81559, power_limit_w=700,
            default_power_limit_w=700, app_sm_clock_mhz=1980, max_sm_clock_mhz=1980, persistence_mode=1,
            mig_enabled=0)
    g.update(overrides)
    return g


def sysfs_tree(root, active_ports=8, drives=2):
    """/sys of a node: GPU i at 0000:(17+i):00.0 behind a switch with adapter mlx5_i; NVMe drives."""
    sys = root / "sys"
    for i in range(8):
        switch = sys / "devices" / f"pci0000:{i:02x}" / f"0000:{i:02x}:01.0"
        for bus, kind in ((0x17 + i, "gpu"), (0x60 + i, "nic")):
            dev = switch / f"0000:{bus:02x}:00.0"
            dev.mkdir(parents=True)
            (dev / "numa_node").write_text(f"{i // 4}\n")
            link = sys / "bus" / "pci" / "devices" / dev.name
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(dev)
            if kind == "nic":
                ib = sys / "class" / "infiniband" / f"mlx5_{i}"
                (ib / "ports" / "1").mkdir(parents=True)
                (ib / "device").symlink_to(dev)
                (ib / "node_guid").write_text(f"b8ce:f603:00aa:00{i:02x}\n")
                (ib / "ports" / "1" / "state").write_text("4: ACTIVE\n" if i < active_ports else "1: DOWN\n")
                (ib / "ports" / "1" / "rate").write_text("400 Gb/sec (4X NDR)\n")
                (ib / "ports" / "1" / "link_layer").write_text("InfiniBand\n")
    for d in range(drives):
        dev = sys / "devices" / "pci0000:80" / f"0000:80:0{d}.0" / f"0000:9{d}:00.0"
        dev.mkdir(parents=True)
        (dev / "numa_node").write_text("1\n")
        nvme = sys / "class" / "nvme" / f"nvme{d}"
        nvme.mkdir(parents=True)
        (nvme / "device").symlink_to(dev)
        (nvme / "model").write_text("SAMSUNG MZQL23T8HCLS\n")
        (nvme / "serial").write_text(f"S64HNE0T{d}\n")
        (nvme / "firmware_rev").write_text("GDC5602Q\n")
    return str(root)


def node_report(tmp_path, name, gpus, **sysfs):
    root = tmp_path / f"root-{name}"
    (tmp_path / name).mkdir()
    env = fake_nvml_env(tmp_path / name, gpus)
    env["INFRABENCH_SYSFS_ROOT"] = sysfs_tree(root, **sysfs)
    out = str(tmp_path / f"{name}.json")
    p = run(*RUN, "-o", out, env=env)
    assert p.returncode in (0, 1), p.stderr
    return out, load_report(out)


def baseline(tmp_path):
    return write(tmp_path, "expect.json", {
        "infrabench_baseline": 1, "name": "inventory",
        "rules": [{"benchmark": "health/gpu_nvlink", "metric": "nvlinks_active_min", "min": 0}],
        "expect": EXPECT})


def test_inventory_is_read_from_nvml_and_sysfs(tmp_path):
    _, rep = node_report(tmp_path, "good", [identity(i) for i in range(8)])
    dev = rep["hosts"][0]["devices"]
    assert dev["gpu_source"] == "nvml"
    assert len(dev["gpus"]) == 8
    g3 = dev["gpus"][3]
    assert (g3["vbios"], g3["serial"], g3["power_limit_w"], g3["persistence_mode"]) == \
        ("96.00.89.00.01", "1650103", 700, True)
    assert g3["pci_bus_id"] == "0000:1a:00.0"
    assert g3["numa_node"] == 0 and dev["gpus"][5]["numa_node"] == 1
    assert g3["nearest_ib_device"] == "mlx5_3"  # the adapter behind the GPU's own switch
    assert [p["state"] for p in dev["ib_ports"]] == ["ACTIVE"] * 8
    assert dev["counts"]["ib_rate_gbps"] == 400 and dev["counts"]["nvme_drives"] == 2


def test_expect_passes_a_good_node(tmp_path):
    report, _ = node_report(tmp_path, "good", [identity(i) for i in range(8)])
    p = run("check", report, "--baseline", baseline(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "expect.gpus" in p.stdout


def test_expect_names_exactly_what_is_broken(tmp_path):
    gpus = [identity(i) for i in range(8)]
    gpus[5]["vbios"] = "96.00.61.00.01"  # flashed differently
    gpus[2]["nvlinks_down"] = [7]        # one link down
    del gpus[7]                          # one GPU fell off the bus
    report, _ = node_report(tmp_path, "broken", gpus, active_ports=7)
    p = run("check", report, "--baseline", baseline(tmp_path), "--format", "json")
    assert p.returncode == 1, p.stdout + p.stderr
    verdicts = {v["rule"]: v for v in json.loads(p.stdout)["rules"]}
    failed = sorted(k for k, v in verdicts.items() if v["verdict"] == "FAIL" and k.startswith("expect."))
    assert failed == ["expect.gpus", "expect.ib_ports_active", "expect.nvlinks_per_gpu",
                      "expect.same_across_gpus.vbios"], failed
    assert "96.00.61.00.01" in verdicts["expect.same_across_gpus.vbios"]["detail"]
    assert verdicts["expect.gpu.persistence_mode"]["verdict"] == "PASS"
    # The per-GPU verdicts name exactly the broken GPUs: GPU 5 (VBIOS) and GPU 2 (a link down); the
    # missing GPU and the IB port are the node's (no GPU index can name a GPU that is not there).
    [node] = json.loads(p.stdout)["nodes"]
    assert node["verdict"] == "FAIL" and node["failed_gpus"] == [2, 5], node
    [drain] = json.loads(p.stdout)["drain"]
    blamed = sorted((e["gpu"], e["rule"]) for e in drain["evidence"]
                    if e["gpu"] is not None and e["rule"].startswith("expect."))
    assert blamed == [(2, "expect.nvlinks_per_gpu"), (5, "expect.same_across_gpus.vbios")], blamed
    text = run("check", report, "--baseline", baseline(tmp_path)).stdout
    assert any(line.split()[:3] == [node["host"], "FAIL", "2,5"] for line in text.splitlines()), text
    om = run("check", report, "--baseline", baseline(tmp_path), "--format", "openmetrics").stdout
    gpus = sorted(l.split('gpu="')[1].split('"')[0] for l in om.splitlines()
                  if l.startswith("infrabench_gpu_failed_rules{"))
    assert gpus == ["2", "5"], om


def test_expect_is_refused_with_one_line_when_malformed(tmp_path):
    bad = write(tmp_path, "bad.json", {"infrabench_baseline": 1, "rules": [
        {"benchmark": "health/gpu_nvlink", "metric": "nvlinks_active_min", "min": 0}],
        "expect": {"gpus": 8, "gpu": {"colour": "green"}}})
    p = run("baseline", "lint", bad)
    assert p.returncode == 2
    assert "colour" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_shipped_h100_template_expects_the_inventory():
    src = os.environ.get("INFRABENCH_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    with open(os.path.join(src, "configs", "baselines", "template-h100-8gpu.json")) as f:
        template = json.load(f)
    assert template["expect"]["gpus"] == 8
    assert template["expect"]["nvlinks_per_gpu"] == 18
