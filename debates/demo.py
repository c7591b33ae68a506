"""The bundled demo: a moderator and a viewer account and a cross-examination over public facts."""

from __future__ import annotations

DEMO_TOPIC = "Should a large city centre introduce a congestion charge for private cars?"

DEMO_MATERIAL = """\
Stockholm ran a seven-month congestion-charge trial in 2006 and made the charge permanent in 2007 after a referendum.
During the trial, traffic across the charging cordon fell by about 20 percent compared with the year before.
Public support in Stockholm was below 40 percent before the trial and rose above 50 percent after it.
London introduced its central congestion charge in February 2003 at a daily rate of five pounds.
Transport for London reported that traffic entering the zone fell by about 18 percent in the first year.
Later studies found that congestion in central London drifted back towards pre-charge levels by 2007, partly because road space was reallocated to buses, cyclists and pedestrians.
Singapore has priced road use since 1975 and moved to electronic road pricing in 1998.
Critics argue that a flat charge is regressive, because it takes a larger share of the income of poorer drivers.
Revenue from the London charge is required by law to be spent on transport improvements.
Retail groups in several cities warned of lost trade, but studies of Stockholm found no measurable drop in retail sales inside the cordon.
"""

DEMO_ANALYSTS = [
    {"name": "Ada", "lens": "transport economics: costs, benefits and prices"},
    {"name": "Bo", "lens": "equity and public acceptance"},
    {"name": "Cy", "lens": "evidence quality and durability of effects"},
]
