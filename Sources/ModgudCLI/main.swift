print("modgud")
