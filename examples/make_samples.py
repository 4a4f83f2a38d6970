"""Regenerate the binary sample files of the Lanternfish Robotics handbook.

Lanternfish Robotics / 灯笼鱼机器人有限公司 is a fictional company; all text
below was written for Lore's demo and tests.

Produces, in handbook/ beside this script (or in --outdir):

    price_list.xlsx     two sheets: "Robots" and "Services"
    travel_policy.docx  差旅管理办法 with Heading 1/2 styles and one table
    product_sheet.pdf   2-page LF-200 Picker product sheet

All content lives in this file so it can be reviewed in git.  Output is
deterministic: document properties use a fixed timestamp, and the zip
containers (xlsx/docx) are rewritten with fixed member timestamps, so
rerunning the script yields byte-identical files.

Usage:  python make_samples.py [--outdir DIR] [--no-verify]
Needs:  openpyxl, python-docx, pymupdf
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import zipfile
from pathlib import Path

FIXED_DT = dt.datetime(2024, 4, 1, 9, 0, 0)  # naive, treated as UTC
FIXED_ZIP_TIME = (2024, 4, 1, 9, 0, 0)
FIXED_PDF_DATE = "D:20240401090000Z"
AUTHOR = "Lanternfish Robotics People Operations (fictional)"

# --------------------------------------------------------------------------
# price_list.xlsx
# --------------------------------------------------------------------------

ROBOTS_HEADER = ["SKU", "Model", "型号中文名", "Payload (kg)", "List price (USD)", "保修期 (months)"]
ROBOTS_ROWS = [
    ["RB-200-STD", "LF-200 Picker", "LF-200 拣选机器人", 15, 38500, 24],
    ["RB-200-CLD", "LF-200C Cold-Chain Picker", "LF-200C 冷链拣选机器人", 15, 44900, 24],
    ["RB-300-STD", "LF-300 Tote Shuttle", "LF-300 料箱穿梭车", 30, 29800, 18],
    ["RB-500-STD", "LF-500 Mover", "LF-500 搬运机器人", 500, 56000, 24],
    ["RB-700-STK", "LF-700 Pallet Stacker", "LF-700 托盘堆垛机器人", 700, 64000, 24],
    ["RB-1000-HD", "LF-1000 Heavy Mover", "LF-1000 重载搬运机器人", 1000, 72500, 36],
    ["RB-S80-SRT", "LF-S80 Sorter", "LF-S80 分拣机器人", 8, 12900, 12],
    ["RB-A20-INV", "LF-A20 Inventory Drone", "LF-A20 盘点无人机", 0.5, 9800, 12],
]

SERVICES_HEADER = ["Service code", "Service", "服务说明", "Price (USD/yr)"]
SERVICES_ROWS = [
    ["SV-CARE-B", "CareBasic remote support", "远程技术支持（工作日 9:00–18:00），含软件升级", 1200],
    [
        "SV-CARE-P",
        "CarePlus on-site maintenance",
        "每季度一次预防性维护，4 小时远程响应，24 小时内工程师到场",
        4800,
    ],
    ["SV-EXT-12", "Extended warranty +12 months", "在标准保修期基础上延长 12 个月保修", 2600],
    [
        "SV-FLEET",
        "Fleet Manager license (per site)",
        "车队管理软件授权，按站点计费，含任务调度与数据看板",
        3000,
    ],
    ["SV-TRAIN", "Operator training subscription", "每年 4 次操作员培训课程，每次最多 10 人", 900],
    ["SV-MAP", "Site mapping & re-layout", "场地建图与布局调整，每年最多 2 次", 1500],
]


def build_xlsx(path: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    wb = Workbook()
    ws = wb.active
    ws.title = "Robots"
    ws.append(ROBOTS_HEADER)
    for row in ROBOTS_ROWS:
        ws.append(row)
    for col, width in zip("ABCDEF", (14, 28, 26, 14, 18, 16), strict=True):
        ws.column_dimensions[col].width = width
    for cell in ws[1]:
        cell.font = Font(bold=True)
    for (cell,) in ws.iter_rows(min_row=2, min_col=5, max_col=5):
        cell.number_format = "#,##0"

    ws2 = wb.create_sheet("Services")
    ws2.append(SERVICES_HEADER)
    for row in SERVICES_ROWS:
        ws2.append(row)
    for col, width in zip("ABCD", (14, 34, 56, 16), strict=True):
        ws2.column_dimensions[col].width = width
    for cell in ws2[1]:
        cell.font = Font(bold=True)
    for (cell,) in ws2.iter_rows(min_row=2, min_col=4, max_col=4):
        cell.number_format = "#,##0"

    props = wb.properties
    props.creator = AUTHOR
    props.lastModifiedBy = AUTHOR
    props.title = "Lanternfish Robotics Price List 2024 / 灯笼鱼机器人价格表"
    props.created = FIXED_DT
    props.modified = FIXED_DT

    # Workbook.save() stamps properties.modified with the current time, so
    # drive the writer directly to keep our fixed timestamp.
    from openpyxl.writer.excel import ExcelWriter

    buf = io.BytesIO()
    archive = zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, allowZip64=True)
    ExcelWriter(wb, archive).save()
    path.write_bytes(_normalize_zip(buf.getvalue()))


# --------------------------------------------------------------------------
# travel_policy.docx
# --------------------------------------------------------------------------

TRAVEL_TITLE = "Lanternfish Robotics Travel Policy"
TRAVEL_SUBTITLE = "灯笼鱼机器人有限公司差旅管理办法（2024 年版）"

# (style, text) blocks; the special block ("TABLE", None) marks where the
# accommodation table goes.
TRAVEL_BLOCKS = [
    ("Heading 1", "一、总则"),
    (
        "Normal",
        (
            "本办法适用于公司全体正式员工及实习生的国内出差。出差前须在 OA 系统提交出差申请，"
            "经直属经理审批后方可预订交通和住宿。"
        ),
    ),
    ("Normal", "公司统一通过差旅平台“灯笼出行”预订机票和酒店，原则上不得由员工自行垫付。"),
    ("Heading 1", "二、交通标准"),
    ("Heading 2", "2.1 火车"),
    ("Normal", "高铁、动车优先选择二等座；夜间乘车时间超过 6 小时的，可乘坐软卧。"),
    ("Heading 2", "2.2 飞机"),
    ("Normal", "一律乘坐经济舱。单程飞行时间超过 4 小时的，经部门总监批准可乘坐超级经济舱。"),
    ("Heading 2", "2.3 市内交通"),
    ("Normal", "出差期间的出租车、网约车费用凭发票实报实销，每人每天上限 200 元。"),
    ("Heading 1", "三、住宿与餐补标准"),
    ("Normal", "住宿费用按出差城市级别在下表上限内实报实销；餐补按出差自然天数定额发放，无需提供发票。"),
    ("TABLE", None),
    ("Heading 2", "3.1 城市级别说明"),
    (
        "Normal",
        (
            "一线城市指北京、上海、广州、深圳；二线城市指省会城市及计划单列市（深圳除外）；"
            "其他城市指上述城市以外的所有城市。"
        ),
    ),
    ("Heading 2", "3.2 超标处理"),
    ("Normal", "超出住宿上限的部分由员工个人承担，事先获得部门总监书面批准的除外。"),
    ("Heading 1", "四、报销"),
    (
        "Normal",
        (
            "出差结束后 30 天内须在 OA 系统提交报销，并附发票原件、费用明细单和审批单。"
            "单笔金额超过 5000 元的，须经部门总监审批。"
        ),
    ),
    ("Heading 1", "五、附则"),
    ("Normal", "本办法由财务部负责解释，自 2024 年 4 月 1 日起施行。"),
]

TRAVEL_TABLE = [
    ["城市级别", "住宿上限（元/晚）", "餐补（元/天）"],
    ["一线城市", "600", "150"],
    ["二线城市", "450", "120"],
    ["其他城市", "350", "100"],
]


def build_docx(path: Path) -> None:
    import docx
    from docx.oxml.ns import qn

    doc = docx.Document()
    # Give CJK text a sensible East Asian font when opened in Word.
    for style_name in ("Normal", "Title", "Subtitle", "Heading 1", "Heading 2"):
        rpr = doc.styles[style_name].element.get_or_add_rPr()
        rfonts = rpr.find(qn("w:rFonts"))
        if rfonts is None:
            rfonts = rpr.makeelement(qn("w:rFonts"), {})
            rpr.append(rfonts)
        rfonts.set(qn("w:eastAsia"), "SimSun")

    doc.add_paragraph(TRAVEL_TITLE, style="Title")
    doc.add_paragraph(TRAVEL_SUBTITLE, style="Subtitle")
    for style, text in TRAVEL_BLOCKS:
        if style == "TABLE":
            table = doc.add_table(rows=0, cols=len(TRAVEL_TABLE[0]))
            table.style = "Table Grid"
            for i, values in enumerate(TRAVEL_TABLE):
                cells = table.add_row().cells
                for cell, value in zip(cells, values, strict=True):
                    cell.text = value
                    if i == 0:
                        for run in cell.paragraphs[0].runs:
                            run.bold = True
        else:
            doc.add_paragraph(text, style=style)

    cp = doc.core_properties
    cp.title = TRAVEL_TITLE
    cp.subject = "差旅管理办法"
    cp.author = AUTHOR
    cp.last_modified_by = AUTHOR
    cp.comments = "Fictional sample document generated by examples/handbook/make_samples.py"
    cp.revision = 1
    cp.created = FIXED_DT
    cp.modified = FIXED_DT
    cp.last_printed = FIXED_DT

    buf = io.BytesIO()
    doc.save(buf)
    path.write_bytes(_normalize_zip(buf.getvalue()))


# --------------------------------------------------------------------------
# product_sheet.pdf
# --------------------------------------------------------------------------

# Each page: list of (kind, text).  kind: "title", "zh-title", "h", "p",
# "zh", "spec" (label, value) or "zh-spec" (label, value).
PDF_PAGES = [
    [
        ("title", "LF-200 Picker"),
        ("zh-title", "LF-200 拣选机器人 - 灯笼鱼机器人有限公司"),
        (
            "p",
            (
                "The LF-200 Picker is an autonomous piece-picking robot for e-commerce "
                "and spare-parts warehouses. It navigates aisles on its own, picks items "
                "from shelves with a suction gripper and delivers totes to packing stations."
            ),
        ),
        ("h", "Specifications"),
        ("spec", ("Maximum payload", "15 kg")),
        ("spec", ("Picking rate", "up to 600 picks per hour")),
        ("spec", ("Maximum speed", "1.5 m/s")),
        ("spec", ("Navigation", "LiDAR + 2D floor-code SLAM")),
        ("spec", ("Battery", "48 V LiFePO4, 10 hours runtime, full charge in 2 hours")),
        ("spec", ("Operating temperature", "0 to 40 °C (not for cold storage; see LF-200C)")),
        ("spec", ("Dimensions (L x W x H)", "800 x 600 x 1750 mm")),
        ("spec", ("Weight", "210 kg")),
        ("spec", ("Connectivity", "Wi-Fi 6; 5G module optional")),
        ("spec", ("Fleet software", "Lanternfish Fleet Manager (service code SV-FLEET)")),
        ("spec", ("List price", "USD 38,500 (SKU RB-200-STD)")),
        ("h", "主要参数（中文）"),
        ("zh", "额定载重：15 公斤；拣选效率：每小时最多 600 次。"),
        ("zh", "续航时间：10 小时；充满电需 2 小时。"),
        ("zh", "工作温度：0 至 40 摄氏度，冷库场景请选择 LF-200C。"),
    ],
    [
        ("title", "Warranty & Returns"),
        ("zh-title", "保修与退货政策"),
        ("h", "Warranty"),
        (
            "p",
            (
                "Every LF-200 Picker comes with a 24-month warranty starting on the date "
                "of delivery. The warranty covers parts and labor for manufacturing defects. "
                "It does not cover damage caused by misuse, unauthorized modification, or "
                "operation outside the rated temperature range of 0 to 40 °C."
            ),
        ),
        ("p", ("The warranty can be extended by 12 months with service SV-EXT-12 (USD 2,600 per year).")),
        ("h", "Returns and refunds"),
        (
            "p",
            (
                "Refund window: hardware can be returned for a full refund within 30 days "
                "of delivery, as long as it is in its original packaging with all accessories. "
                "The refund is paid to the original payment method within 14 business days "
                "after we inspect the returned unit. After 30 days, defects are handled under "
                "the warranty instead."
            ),
        ),
        ("h", "How to file a claim"),
        (
            "p",
            (
                "Email support@lanternfish.example with the robot serial number, a description "
                "of the problem and, if possible, photos or a short video. A support engineer "
                "replies within 1 business day."
            ),
        ),
        ("h", "中文摘要"),
        ("zh", "保修期：自交付之日起 24 个月，覆盖制造缺陷的零件和人工。"),
        ("zh", "退货：自交付之日起 30 天内，包装和配件齐全，可全额退款。"),
        ("zh", "退款在验收退货后 14 个工作日内原路退回。"),
    ],
]

PDF_MARGIN = 56
PDF_WIDTH, PDF_HEIGHT = 595, 842  # A4 portrait, points


def build_pdf(path: Path) -> None:
    import pymupdf

    doc = pymupdf.open()
    for page_no, blocks in enumerate(PDF_PAGES, start=1):
        page = doc.new_page(width=PDF_WIDTH, height=PDF_HEIGHT)
        y = PDF_MARGIN
        right = PDF_WIDTH - PDF_MARGIN
        for kind, content in blocks:
            if kind == "title":
                y += 22
                page.insert_text((PDF_MARGIN, y), content, fontname="hebo", fontsize=22)
                y += 8
            elif kind == "zh-title":
                y += 18
                _mixed_line(page, PDF_MARGIN, y, content, 13, right)
                y += 14
            elif kind == "h":
                y += 20
                if _has_cjk(content):
                    _mixed_line(page, PDF_MARGIN, y, content, 13, right, latin="hebo")
                else:
                    page.insert_text((PDF_MARGIN, y), content, fontname="hebo", fontsize=13)
                y += 8
            elif kind == "p":
                y = _textbox(
                    page, pymupdf.Rect(PDF_MARGIN, y, right, PDF_HEIGHT - PDF_MARGIN), content, "helv", 10.5
                )
                y += 4
            elif kind == "zh":
                y += 16
                _mixed_line(page, PDF_MARGIN, y, content, 10.5, right)
            elif kind == "spec":
                label, value = content
                y += 14
                # One text run per spec so extraction keeps label and value on one line.
                page.insert_text((PDF_MARGIN + 8, y), f"- {label}: {value}", fontname="helv", fontsize=10.5)
            else:
                raise ValueError(kind)
        page.insert_text(
            (PDF_MARGIN, PDF_HEIGHT - 30),
            f"Lanternfish Robotics (fictional company) - LF-200 Picker product sheet - page {page_no} of "
            f"{len(PDF_PAGES)}",
            fontname="helv",
            fontsize=8,
        )

    doc.set_metadata(
        {
            "title": "LF-200 Picker Product Sheet",
            "author": AUTHOR,
            "subject": "LF-200 拣选机器人产品说明",
            "keywords": "LF-200, warehouse robot, warranty, returns",
            "creator": "examples/handbook/make_samples.py",
            "producer": "PyMuPDF",
            "creationDate": FIXED_PDF_DATE,
            "modDate": FIXED_PDF_DATE,
        }
    )
    data = doc.tobytes(garbage=4, deflate=True, no_new_id=True)
    doc.close()
    path.write_bytes(data)


def _has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def _mixed_line(page, x, y, text, fontsize, right, latin="helv") -> None:
    """Write one line mixing a Latin base-14 font (ASCII runs) and the built-in
    "china-s" CJK font (everything else); china-s alone renders ASCII full-width."""
    import re

    import pymupdf

    for seg in re.findall(r"[\x00-\x7f]+|[^\x00-\x7f]+", text):
        font = latin if seg.isascii() else "china-s"
        page.insert_text((x, y), seg, fontname=font, fontsize=fontsize)
        x += pymupdf.get_text_length(seg, fontname=font, fontsize=fontsize)
    if x > right:
        raise RuntimeError(f"line too long for the page: {text[:40]!r}")


def _textbox(page, rect, text, fontname, fontsize) -> float:
    """Insert wrapped text at rect.top; return the y just below it."""
    rc = page.insert_textbox(rect, text, fontname=fontname, fontsize=fontsize, lineheight=1.3)
    if rc < 0:
        raise RuntimeError(f"text does not fit on page: {text[:40]!r}")
    used = rect.height - rc
    return rect.y0 + used


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def _normalize_zip(data: bytes) -> bytes:
    """Rewrite a zip container with fixed timestamps/attributes (reproducible)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            zi = zipfile.ZipInfo(info.filename, date_time=FIXED_ZIP_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            zi.create_system = 3
            dst.writestr(zi, src.read(info.filename))
    return out.getvalue()


def verify(outdir: Path) -> None:
    """Read every generated file back and check the key facts survive."""
    import docx
    import openpyxl
    import pymupdf

    wb = openpyxl.load_workbook(outdir / "price_list.xlsx", read_only=True)
    assert wb.sheetnames == ["Robots", "Services"], wb.sheetnames
    robots = [list(r) for r in wb["Robots"].iter_rows(values_only=True)]
    services = [list(r) for r in wb["Services"].iter_rows(values_only=True)]
    assert robots == [ROBOTS_HEADER] + ROBOTS_ROWS, robots
    assert services == [SERVICES_HEADER] + SERVICES_ROWS, services
    wb.close()

    d = docx.Document(str(outdir / "travel_policy.docx"))
    styles = [p.style.name for p in d.paragraphs]
    assert styles.count("Heading 1") == 5 and styles.count("Heading 2") == 5, styles
    assert d.paragraphs[0].text == TRAVEL_TITLE
    assert len(d.tables) == 1
    cells = [[c.text for c in row.cells] for row in d.tables[0].rows]
    assert cells == TRAVEL_TABLE, cells

    pdf = pymupdf.open(outdir / "product_sheet.pdf")
    assert pdf.page_count == 2
    p1 = " ".join(pdf[0].get_text().split())
    p2 = " ".join(pdf[1].get_text().split())
    for needle in ("LF-200 Picker", "LF-200 拣选机器人", "15 kg", "额定载重：15 公斤", "0 to 40 °C"):
        assert needle in p1, needle
    for needle in (
        "24-month warranty",
        "within 30 days",
        "保修期：自交付之日起 24 个月",
        "自交付之日起 30 天内",
    ):
        assert needle in p2, needle
    pdf.close()
    print("verify: xlsx, docx and pdf read back OK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--outdir", type=Path, default=Path(__file__).resolve().parent / "handbook")
    ap.add_argument("--no-verify", action="store_true")
    args = ap.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)

    build_xlsx(args.outdir / "price_list.xlsx")
    build_docx(args.outdir / "travel_policy.docx")
    build_pdf(args.outdir / "product_sheet.pdf")
    for name in ("price_list.xlsx", "travel_policy.docx", "product_sheet.pdf"):
        print(f"wrote {args.outdir / name} ({(args.outdir / name).stat().st_size} bytes)")
    if not args.no_verify:
        verify(args.outdir)


if __name__ == "__main__":
    main()
