"""What only the composition root (`gateway serve`, `gateway.__main__`) uses: its options
as one typed model (`options`), which trainer backends were asked for and whether this
machine has them (`backends`), and policies hosted in Ray actors (`ray_hosting`).
"""
